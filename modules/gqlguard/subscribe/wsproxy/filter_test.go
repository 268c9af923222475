package wsproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func defaultConfig(cfg Config) func() Config { return func() Config { return cfg } }

func errorCode(t *testing.T, m serverMessage) string {
	t.Helper()
	var errs []struct {
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) != 1 {
		t.Fatalf("error payload %s: %v", m.Payload, err)
	}
	return errs[0].Extensions.Code
}

// expectTicks reads n next messages and the complete of subscription id.
func expectTicks(t *testing.T, c *wsClient, id string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		m := c.next()
		want := fmt.Sprintf(`{"data":{"ticks":%d}}`, i)
		if m.Type != "next" || m.ID != id || string(m.Payload) != want {
			t.Fatalf("got %s %s %s, want next %s %s", m.Type, m.ID, m.Payload, id, want)
		}
	}
	if m := c.next(); m.Type != "complete" || m.ID != id {
		t.Fatalf("got %s %s, want complete %s", m.Type, m.ID, id)
	}
}

func TestSubscribeNextComplete(t *testing.T) {
	checker := &policyChecker{}
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Checker: checker}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(subscribeMsg("1", 3))
	expectTicks(t, c, "1", 3)
	// A payload the Checker rewrites (persisted query) reaches the upstream rewritten.
	c.sendText(`{"id":"2","type":"subscribe","payload":{"extensions":{"persisted":"ticks3"}}}`)
	expectTicks(t, c, "2", 3)
	if got := checker.admitted.Load(); got != 2 {
		t.Fatalf("checker admitted %d, want 2", got)
	}
}

func TestRefusedSubscribeKeepsTheSocketOpen(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Checker: &policyChecker{}}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(`{"id":"x","type":"subscribe","payload":{"query":"subscription { forbidden }"}}`)
	m := c.next()
	if m.Type != "error" || m.ID != "x" || errorCode(t, m) != "FORBIDDEN" {
		t.Fatalf("got %+v", m)
	}
	// The refused id never became active: it can be used again.
	c.sendText(subscribeMsg("x", 2))
	expectTicks(t, c, "x", 2)
}

// TestSubscribeBeforeAckCloses4401: frames sent with the upgrade request go
// through the filter too, and a subscribe sent before the upstream's
// connection_ack reached the client closes the socket with 4401, as
// graphql-transport-ws says — refused or not, before anything is checked,
// charged or forwarded. It used to be checked at once, so a refusal's error
// message reached the client before the ack.
func TestSubscribeBeforeAckCloses4401(t *testing.T) {
	for name, sub := range map[string]string{
		"refused": `{"id":"bad","type":"subscribe","payload":{"query":"subscription { forbidden }"}}`,
		"allowed": subscribeMsg("good", 1),
	} {
		t.Run(name, func(t *testing.T) {
			checker := &policyChecker{}
			p := startProxy(t, startUpstream(t), defaultConfig(Config{Checker: checker}))
			c := dial(t, p.addr, text(`{"type":"connection_init"}`), text(sub))
			op, payload, err := c.readFrame()
			if err != nil || op != opClose || describeClose(payload) != `4401 "Unauthorized"` {
				t.Fatalf("first frame: op %d %q %v, want close 4401 Unauthorized and nothing before it", op, payload, err)
			}
			if n := checker.admitted.Load(); n != 0 {
				t.Fatalf("the checker admitted %d subscribes before the ack", n)
			}
		})
	}
}

func TestNoInitClosesAfterInitTimeout(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{InitTimeout: 50 * time.Millisecond}))
	c := dial(t, p.addr)
	c.expectClose(closeInitTimeout, "Connection initialisation timeout")
}

func TestSecondInitCloses4429(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(`{"type":"connection_init"}`)
	c.expectClose(closeTooManyInits, "Too many initialisation requests")
}

func TestSubscribeBeforeInitCloses4401(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{}))
	c := dial(t, p.addr)
	c.sendText(subscribeMsg("1", 1))
	c.expectClose(closeUnauthorized, "Unauthorized")
}

func TestDuplicateIDCloses4409(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{}))
	c := dial(t, p.addr)
	c.init()
	id := strings.Repeat("i", 200)
	c.sendText(subscribeMsg(id, 0))
	c.sendText(subscribeMsg(id, 0))
	c.expectClose(closeSubscriberExists, ("Subscriber for " + id + " already exists")[:maxCloseReason])
}

func TestInvalidMessagesClose4400(t *testing.T) {
	for name, msg := range map[string]string{
		"not json":     `{"type":`,
		"unknown type": `{"type":"start","id":"1"}`,
		"missing id":   `{"type":"subscribe","payload":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := startProxy(t, startUpstream(t), defaultConfig(Config{}))
			c := dial(t, p.addr)
			c.init()
			c.sendText(msg)
			for {
				op, pl, err := c.readFrame()
				if err != nil {
					t.Fatal(err)
				}
				if op == opClose {
					if code := describeClose(pl); !strings.HasPrefix(code, "4400 ") {
						t.Fatalf("close %s, want 4400", code)
					}
					return
				}
			}
		})
	}
}

func TestBinaryAndReservedBits(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{}))
	c := dial(t, p.addr)
	c.send(frame(opBinary, true, []byte("x")))
	c.expectClose(closeBadRequest, "Binary messages are not supported")

	c = dial(t, p.addr)
	f := text(`{"type":"ping"}`)
	f[0] |= 0x40
	c.send(f)
	c.expectClose(closeProtocolError, "Reserved bits must be 0")
}

func TestOversizedMessageCloses1009WithoutReadingIt(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{MaxMessage: 1024}))
	c := dial(t, p.addr)
	// Announce 1 MiB and send only the header and a few bytes: the close
	// must come from the announcement alone.
	hdr := appendFrameHeader(nil, opText, 1<<20, &[4]byte{1, 2, 3, 4})
	c.send(append(hdr, "{\"ty"...))
	c.expectClose(closeMessageTooBig, "Message too big")

	// Fragments adding up past the limit are refused too.
	c = dial(t, p.addr)
	c.send(frame(opText, false, make([]byte, 1000)), frame(opContinuation, true, make([]byte, 100)))
	c.expectClose(closeMessageTooBig, "Message too big")
}

func TestFragmentedMessageWithInterleavedPing(t *testing.T) {
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Checker: &policyChecker{}}))
	c := dial(t, p.addr)
	c.init()
	msg := []byte(subscribeMsg("f", 2))
	c.send(
		frame(opText, false, msg[:10]),
		frame(opPing, true, []byte("hello")),
		frame(opContinuation, false, msg[10:30]),
		frame(opContinuation, true, msg[30:]),
	)
	sawPong := false
	ticks := 0
	for {
		op, pl, err := c.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		if op == opPong {
			sawPong = string(pl) == "hello"
			continue
		}
		var m serverMessage
		if err := json.Unmarshal(pl, &m); err != nil {
			t.Fatalf("%q: %v", pl, err)
		}
		if m.Type == "next" {
			ticks++
			continue
		}
		if m.Type != "complete" || ticks != 2 {
			t.Fatalf("got %s after %d ticks", m.Type, ticks)
		}
		break
	}
	if !sawPong {
		t.Fatal("the ping inside the fragmented message was not answered")
	}
}

func TestTokenIsNeverForwarded(t *testing.T) {
	const token = "cg_live_0123456789abcdef"
	checker := &policyChecker{}
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Token: token, Checker: checker}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(`{"id":"v","type":"subscribe","payload":{"query":"subscription { ticks(n: 1) }","variables":{"k":"` + token + `"}}}`)
	if m := c.next(); m.Type != "error" || m.ID != "v" || errorCode(t, m) != "BAD_REQUEST" {
		t.Fatalf("got %+v", m)
	}
	// The same token spelled with a JSON escape.
	escaped := `\u0063` + token[1:]
	c.sendText(`{"id":"w","type":"subscribe","payload":{"query":"subscription { ticks(n: 1) }","variables":{"k":"` + escaped + `"}}}`)
	if m := c.next(); m.Type != "error" || m.ID != "w" || errorCode(t, m) != "BAD_REQUEST" {
		t.Fatalf("got %+v", m)
	}
	if checker.admitted.Load() != 0 {
		t.Fatal("a subscribe carrying the token reached the Checker")
	}
	c.sendText(subscribeMsg("ok", 1))
	expectTicks(t, c, "ok", 1)

	c = dial(t, p.addr)
	c.sendText(`{"type":"connection_init","payload":{"authorization":"Bearer ` + token + `"}}`)
	c.expectClose(closeBadRequest, "Request must not contain the bearer token")
}

// firingWatch is a CredentialWatch a test fires.
type firingWatch struct {
	done     chan struct{}
	fireOnce sync.Once
	mu       sync.Mutex
	reason   string
	stopped  chan struct{}
	stopOnce sync.Once
}

func newFiringWatch() *firingWatch {
	return &firingWatch{done: make(chan struct{}), stopped: make(chan struct{})}
}

func (w *firingWatch) Done() <-chan struct{} { return w.done }

func (w *firingWatch) Reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

func (w *firingWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stopped) })
	w.fireOnce.Do(func() { close(w.done) })
}

func (w *firingWatch) fire(reason string) {
	w.mu.Lock()
	w.reason = reason
	w.mu.Unlock()
	w.fireOnce.Do(func() { close(w.done) })
}

func TestWatchFiringCloses4403(t *testing.T) {
	watch := newFiringWatch()
	slots := newCountingSlots(10)
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Watch: watch, Slots: slots}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(subscribeMsg("live", 0))
	slots.await(t, 1)
	start := time.Now()
	watch.fire("API key revoked")
	c.expectClose(closeForbidden, "API key revoked")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("close after %v", d)
	}
	select {
	case <-watch.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch was not stopped when the connection ended")
	}
	slots.await(t, 0)
}

func TestSlotsReleasedOnEitherCompleteAndOnDisconnect(t *testing.T) {
	slots := newCountingSlots(2)
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Slots: slots}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(subscribeMsg("a", 0))
	c.sendText(subscribeMsg("b", 0))
	slots.await(t, 2)
	c.sendText(subscribeMsg("c", 0))
	if m := c.next(); m.Type != "error" || m.ID != "c" || errorCode(t, m) != "SUBSCRIPTION_LIMIT" {
		t.Fatalf("got %+v", m)
	}
	// The client completes a.
	c.sendText(`{"id":"a","type":"complete"}`)
	slots.await(t, 1)
	// The upstream completes d.
	c.sendText(subscribeMsg("d", 1))
	for m := c.next(); m.Type != "complete" || m.ID != "d"; m = c.next() {
		if m.ID != "d" && m.ID != "a" {
			t.Fatalf("got %+v", m)
		}
	}
	slots.await(t, 1)
	// Disconnecting releases b.
	_ = c.conn.Close()
	slots.await(t, 0)
}

// rateCharger allows `allow` charges, then refuses.
type rateCharger struct {
	mu    sync.Mutex
	allow int
	err   error
}

func (r *rateCharger) Charge(context.Context) (bool, time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return false, 0, r.err
	}
	if r.allow == 0 {
		return false, 1500 * time.Millisecond, nil
	}
	r.allow--
	return true, 0, nil
}

func TestChargerRefusals(t *testing.T) {
	charger := &rateCharger{allow: 1}
	p := startProxy(t, startUpstream(t), defaultConfig(Config{Charger: charger}))
	c := dial(t, p.addr)
	c.init()
	c.sendText(subscribeMsg("1", 1))
	expectTicks(t, c, "1", 1)
	c.sendText(subscribeMsg("2", 1))
	m := c.next()
	if m.Type != "error" || string(m.Payload) != `[{"message":"Rate limit exceeded","extensions":{"code":"RATE_LIMITED","retryAfter":2}}]` {
		t.Fatalf("got %s %s", m.Type, m.Payload)
	}
	charger.mu.Lock()
	charger.err = fmt.Errorf("store down")
	charger.mu.Unlock()
	c.sendText(subscribeMsg("3", 1))
	if m := c.next(); m.Type != "error" || errorCode(t, m) != "INTERNAL_SERVER_ERROR" {
		t.Fatalf("got %+v", m)
	}
}
