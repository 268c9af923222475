package gqlguard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestTerminatedDedup: identical subscriptions in one dedup scope are ONE
// subscription at the engine; every client gets every event once, in order,
// under its own id; a subscriber leaving (complete, socket closed) does not
// end the others' and the last one leaving ends it at the engine.
func TestTerminatedDedup(t *testing.T) {
	e := startTerminating(t, "dedup key")
	const n = 5
	clients := make([]*termClient, n)
	for i := range clients {
		clients[i] = e.dial(t)
		clients[i].init()
		clients[i].subscribe("s"+strconv.Itoa(i), loanEventsSub)
		clients[i].joined()
	}
	e.awaitEngineSubscribers(t, 1)
	for ev := 1; ev <= 3; ev++ {
		e.publish("l" + strconv.Itoa(ev))
		for i, c := range clients {
			c.expectNext("s"+strconv.Itoa(i), "l"+strconv.Itoa(ev))
		}
	}
	if got := e.upgrades.Load(); got != 1 {
		t.Fatalf("the engine received %d upgrades, want 1", got)
	}

	clients[0].send(wsMessage{Type: "complete", ID: "s0"})
	_ = clients[1].c.CloseNow()
	e.publish("l4")
	for i := 2; i < n; i++ {
		clients[i].expectNext("s"+strconv.Itoa(i), "l4")
	}
	if got := e.events.Subscribers(); got != 1 {
		t.Fatalf("engine holds %d subscriptions after two subscribers left, want 1", got)
	}
	for i := 2; i < n; i++ {
		clients[i].send(wsMessage{Type: "complete", ID: "s" + strconv.Itoa(i)})
	}
	e.awaitEngineSubscribers(t, 0)
}

// TestTerminatedNoDedup: without dedup every subscription is its own at the
// engine, all on one upstream socket (one identity scope).
func TestTerminatedNoDedup(t *testing.T) {
	e := startTerminating(t, "")
	a, b := e.dial(t), e.dial(t)
	a.init()
	b.init()
	a.subscribe("x", loanEventsSub)
	a.subscribe("y", loanEventsSub)
	b.subscribe("x", loanEventsSub)
	a.joined()
	b.joined()
	e.awaitEngineSubscribers(t, 3)
	e.publish("l1")
	got := map[string]int{}
	for range 2 {
		m := a.read()
		got[m.ID]++
	}
	if got["x"] != 1 || got["y"] != 1 {
		t.Fatalf("a got %v", got)
	}
	b.expectNext("x", "l1")
	if n := e.upgrades.Load(); n != 1 {
		t.Fatalf("the engine received %d upgrades, want 1", n)
	}
}

// TestTerminatedProtocol: the filter's protocol rules hold on a terminated
// socket (wsproxy/README.md).
func TestTerminatedProtocol(t *testing.T) {
	e := startTerminating(t, "init_timeout 1s")
	t.Run("subscribe before connection_init: 4401", func(t *testing.T) {
		c := e.dial(t)
		c.subscribe("a", loanEventsSub)
		if code, reason := c.closeCode(); code != 4401 || reason != "Unauthorized" {
			t.Fatalf("close %d %q", code, reason)
		}
	})
	t.Run("duplicate id: 4409", func(t *testing.T) {
		c := e.dial(t)
		c.init()
		c.subscribe("a", loanEventsSub)
		c.subscribe("a", loanEventsSub)
		if code, reason := c.closeCode(); code != 4409 || reason != "Subscriber for a already exists" {
			t.Fatalf("close %d %q", code, reason)
		}
	})
	t.Run("second connection_init: 4429", func(t *testing.T) {
		c := e.dial(t)
		c.init()
		c.send(wsMessage{Type: "connection_init"})
		if code, reason := c.closeCode(); code != 4429 || reason != "Too many initialisation requests" {
			t.Fatalf("close %d %q", code, reason)
		}
	})
	t.Run("no connection_init: 4408", func(t *testing.T) {
		c := e.dial(t)
		if code, reason := c.closeCode(); code != 4408 || reason != "Connection initialisation timeout" {
			t.Fatalf("close %d %q", code, reason)
		}
	})
	t.Run("invalid document: error message, socket open", func(t *testing.T) {
		c := e.dial(t)
		c.init()
		c.subscribe("bad", `subscription { nope }`)
		m := c.read()
		if m.Type != "error" || m.ID != "bad" || !strings.Contains(string(m.Payload), "GRAPHQL_VALIDATION_FAILED") {
			t.Fatalf("%+v", m)
		}
		c.send(wsMessage{Type: "ping"})
		if m := c.read(); m.Type != "pong" {
			t.Fatalf("after the refusal: %+v", m)
		}
	})
	t.Run("binary frame: 4400", func(t *testing.T) {
		c := e.dial(t)
		if err := c.c.Write(c.ctx, websocket.MessageBinary, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if code, reason := c.closeCode(); code != 4400 || reason != "Binary messages are not supported" {
			t.Fatalf("close %d %q", code, reason)
		}
	})
	t.Run("per-connection limit: SUBSCRIPTION_LIMIT", func(t *testing.T) {
		f := startTerminating(t, "max_per_connection 1")
		c := f.dial(t)
		c.init()
		c.subscribe("a", loanEventsSub)
		c.subscribe("b", loanEventsSub)
		m := c.read()
		if m.Type != "error" || m.ID != "b" || !strings.Contains(string(m.Payload), `"SUBSCRIPTION_LIMIT"`) {
			t.Fatalf("%+v", m)
		}
	})
}

// TestTerminatedLifetime: max_lifetime ends the subscription with
// SUBSCRIPTION_EXPIRED; the socket stays open and the id may be used again.
func TestTerminatedLifetime(t *testing.T) {
	e := startTerminating(t, "max_lifetime 1s")
	c := e.dial(t)
	c.init()
	c.subscribe("a", loanEventsSub)
	m := c.read()
	if m.Type != "error" || m.ID != "a" || string(m.Payload) != `[{"message":"Subscription lifetime exceeded","extensions":{"code":"SUBSCRIPTION_EXPIRED"}}]` {
		t.Fatalf("%s %s %s", m.Type, m.ID, m.Payload)
	}
	e.awaitEngineSubscribers(t, 0)
	c.subscribe("a", loanEventsSub)
	e.awaitEngineSubscribers(t, 1)
	e.publish("l1")
	c.expectNext("a", "l1")
}

// TestTerminatedKeepaliveTimeout: a client that answers no ping is closed
// 4504.
func TestTerminatedKeepaliveTimeout(t *testing.T) {
	e := startTerminating(t, "keepalive 1s\npong_timeout 1s")
	w := e.dialRaw(t, 0)
	w.sendText(`{"type":"connection_init"}`)
	if code, reason := w.awaitClose(); code != 4504 || reason != "Keepalive timeout" {
		t.Fatalf("close %d %q", code, reason)
	}
}

// TestTerminatedUpstreamRestart: the upstream socket is lost mid-stream;
// the gateway reconnects and subscribes again, and the client, told
// nothing, gets the events published after.
func TestTerminatedUpstreamRestart(t *testing.T) {
	var proxy *cuttableProxy
	e := startTerminatingVia(t, "", func(addr string) string {
		proxy = newCuttableProxy(t, addr)
		return proxy.ln.Addr().String()
	})
	c := e.dial(t)
	c.init()
	c.subscribe("a", loanEventsSub)
	c.joined()
	e.awaitEngineSubscribers(t, 1)
	e.publish("l1")
	c.expectNext("a", "l1")
	proxy.cut()
	testenv.Eventually(t, 20*time.Second, "the gateway subscribed again", func() error {
		// Only the new socket is left, and it holds the subscription.
		if n, live, subs := e.upgrades.Load(), e.activeWS.Load(), e.events.Subscribers(); n < 2 || live != 1 || subs != 1 {
			return fmt.Errorf("%d upgrades, %d live sockets, %d subscriptions at the engine", n, live, subs)
		}
		return nil
	})
	e.publish("l2")
	c.expectNext("a", "l2")
}

// TestTerminatedSlowConsumer: a client that stops reading is dropped with
// close 1013 once send_buffer messages wait for it; the fast subscriber of
// the same group gets every event meanwhile, in order.
func TestTerminatedSlowConsumer(t *testing.T) {
	e := startTerminating(t, "dedup key\nsend_buffer 4")
	const dropped = "civicgate_graphql_guard_subscription_slow_consumers_dropped_total"
	const sub = `subscription { loanEvents { loan { id due } } }`
	before := metricValue(t, dropped)
	slow := e.dialRaw(t, 4096)
	slow.sendText(`{"type":"connection_init"}`)
	if op, p, err := slow.readFrame(); err != nil || op != 0x1 || string(p) != `{"type":"connection_ack"}` {
		t.Fatalf("ack: %d %s %v", op, p, err)
	}
	slow.sendText(`{"id":"s","type":"subscribe","payload":{"query":` + jsonString(sub) + `}}`)
	slow.sendText(`{"type":"ping"}`)
	if op, p, err := slow.readFrame(); err != nil || op != 0x1 || string(p) != `{"type":"pong"}` {
		t.Fatalf("pong: %d %s %v", op, p, err)
	}
	fast := e.dial(t)
	fast.init()
	fast.subscribe("f", sub)
	fast.joined()
	e.awaitEngineSubscribers(t, 1)
	// The slow client reads nothing from here on; 32 KiB events fill the
	// kernel's buffers after a few hundred.
	due := strings.Repeat("x", 32<<10)
	for i := 1; ; i++ {
		if i > 5_000 {
			t.Fatal("the slow client was never dropped")
		}
		id := "l" + strconv.Itoa(i)
		e.publishDue(id, due)
		m := fast.read()
		if m.Type != "next" || m.ID != "f" || !strings.Contains(string(m.Payload), `"id":"`+id+`"`) {
			t.Fatalf("event %d: %s %s %.80s", i, m.Type, m.ID, m.Payload)
		}
		if i%10 == 0 && metricValue(t, dropped) > before {
			break
		}
	}
	if code, reason := slow.awaitClose(); code != 1013 || reason != "Too slow: send buffer full" {
		t.Fatalf("slow client closed %d %q", code, reason)
	}
	e.publishDue("after", "")
	if m := fast.read(); m.Type != "next" || !strings.Contains(string(m.Payload), `"id":"after"`) {
		t.Fatalf("after the drop: %s %s", m.Type, m.Payload)
	}
}

// TestTerminatedPausedReaderGetsEveryEvent: a client that stops reading
// for a while, but not for long enough to overflow its send buffer, gets
// every event whole and in order once it reads again. Its frames go inline
// (one non-blocking write from the fan-out) while its kernel buffers have
// room; when they fill, a frame is written in part and the socket's writer
// goroutine takes the rest and the queue behind it (server_queue.go
// writeInline): 12 MiB to a 4 KiB receive window crosses that hand-off.
func TestTerminatedPausedReaderGetsEveryEvent(t *testing.T) {
	e := startTerminating(t, "dedup key\nsend_buffer 1000")
	const sub = `subscription { loanEvents { loan { id due } } }`
	c := e.dialRaw(t, 4096)
	c.sendText(`{"type":"connection_init"}`)
	if op, p, err := c.readMessage(); err != nil || op != 0x1 || string(p) != `{"type":"connection_ack"}` {
		t.Fatalf("ack: %d %s %v", op, p, err)
	}
	c.sendText(`{"id":"s","type":"subscribe","payload":{"query":` + jsonString(sub) + `}}`)
	// A reading subscriber of the same group paces the events: the engine
	// drops a subscriber 64 events behind, so each is published once the
	// gateway has fanned out the one before.
	fast := e.dial(t)
	fast.init()
	fast.subscribe("f", sub)
	fast.joined()
	e.awaitEngineSubscribers(t, 1)
	const events = 400
	due := strings.Repeat("x", 30<<10)
	// The paused client reads again after 150 events (4.4 MiB, past what
	// the kernel buffers) or 5 s, whichever comes first: the socket's writer
	// drops a client whose write does not finish within its 10 s
	// WriteTimeout, and on a loaded machine 150 events can take longer.
	resume := make(chan struct{})
	read := make(chan error, 1)
	go func() {
		<-resume
		for i := 1; i <= events; i++ {
			op, p, err := c.readMessage()
			if err != nil || op != 0x1 {
				read <- fmt.Errorf("event %d: op %d, %v", i, op, err)
				return
			}
			want := `{"id":"s","type":"next","payload":{"data":{"loanEvents":{"loan":{"id":"l` + strconv.Itoa(i) + `-","due":"` + due + `"}}}}}`
			if string(p) != want {
				read <- fmt.Errorf("event %d: %.120s (%d bytes), want %.120s (%d bytes)", i, p, len(p), want, len(want))
				return
			}
		}
		read <- nil
	}()
	start, resumed := time.Now(), false
	for i := 1; i <= events; i++ {
		if !resumed && (i > 150 || time.Since(start) > 5*time.Second) {
			close(resume)
			resumed = true
		}
		id := "l" + strconv.Itoa(i) + "-"
		e.publishDue(id, due)
		if m := fast.read(); m.Type != "next" || !strings.Contains(string(m.Payload), `"id":"`+id+`"`) {
			t.Fatalf("reading subscriber, event %d: %s %.80s", i, m.Type, m.Payload)
		}
	}
	if !resumed {
		close(resume)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
}

// TestTerminatedEventStream: a graphql-sse subscription is served from the
// same dedup group as a WebSocket's: one subscription at the engine, the
// event on both; the stream ends with the client.
func TestTerminatedEventStream(t *testing.T) {
	e := startTerminating(t, "dedup key")
	ws := e.dial(t)
	ws.init()
	ws.subscribe("w", loanEventsSub)
	ws.joined()
	e.awaitEngineSubscribers(t, 1)
	resp := e.postEventStream(t, context.Background())
	// The guard joins the stream to its group before it sends the headers.
	e.publish("l1")
	ws.expectNext("w", "l1")
	br := bufio.NewReader(resp.Body)
	var lines []string
	for len(lines) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line = strings.TrimRight(line, "\n"); line != "" {
			lines = append(lines, line)
		}
	}
	want := []string{"event: next", `data: {"data":{"loanEvents":{"kind":"BORROWED","loan":{"id":"l1"}}}}`}
	if lines[0] != want[0] || lines[1] != want[1] {
		t.Fatalf("stream %q, want %q", lines, want)
	}
	if got := e.events.Subscribers(); got != 1 {
		t.Fatalf("engine holds %d subscriptions, want 1", got)
	}
	resp.Body.Close()
	ws.send(wsMessage{Type: "complete", ID: "w"})
	e.awaitEngineSubscribers(t, 0)
}

// TestTerminatedEventStreamKeepalive: an event stream with no events gets an
// SSE comment every keepalive (here 1 s), which clients ignore and which
// keeps proxies on the way from closing an idle stream; events still arrive
// between them.
func TestTerminatedEventStreamKeepalive(t *testing.T) {
	e := startTerminating(t, "dedup key\n\t\t\tkeepalive 1s")
	// 30 s bounds a gateway that never writes a comment (the test then
	// fails on the read); it is a ceiling, not the expected pace.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := e.postEventStream(t, ctx)
	e.awaitEngineSubscribers(t, 1)
	br := bufio.NewReader(resp.Body)
	// A comment comes first: nothing is published yet.
	if line, err := br.ReadString('\n'); err != nil || line != ":\n" {
		t.Fatalf("first line %q (%v), want the keepalive comment", line, err)
	}
	e.publish("l1")
	var data string
	for data == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			data = d
		}
	}
	if !strings.Contains(data, `"id":"l1"`) {
		t.Fatalf("event data %s", data)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ":\n" {
			break // the keepalive resumes once the stream is idle again
		}
	}
}

// postEventStream opens a graphql-sse stream of loanEventsSub (POST) under
// ctx and checks it was answered 200 text/event-stream; its body closes when
// the test ends.
func (e *termEnv) postEventStream(t *testing.T, ctx context.Context) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.s.base+"/ws", strings.NewReader(`{"query":`+jsonString(loanEventsSub)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp
}

// TestTerminatedEventStreamOverGET: a graphql-sse subscription sent as GET
// (methods GET POST) is served from the hub like a POST stream: it joins the
// WebSocket's dedup group (one subscription at the engine) and gets its events.
func TestTerminatedEventStreamOverGET(t *testing.T) {
	e := startTerminatingGuard(t, "methods GET POST", "dedup key", nil)
	ws := e.dial(t)
	ws.init()
	ws.subscribe("w", loanEventsSub)
	ws.joined()
	e.awaitEngineSubscribers(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a ceiling for the reads below
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.s.base+"/ws?query="+url.QueryEscape(loanEventsSub), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	e.publish("l1")
	ws.expectNext("w", "l1")
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			if !strings.Contains(d, `"id":"l1"`) {
				t.Fatalf("event data %s", d)
			}
			break
		}
	}
	if got := e.events.Subscribers(); got != 1 {
		t.Fatalf("engine holds %d subscriptions for the socket's and the stream's, want 1", got)
	}
}
