package reliability

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Hostile graphql-transport-ws clients against the real civicgate binary in
// front of the real gqlgen library engine (examples/other-backend/library):
// a socket that never initialises, a subscribe flood, a subscribe carrying
// the key, and oversized or lying frames.
const subscriptionsGuard = `
			subscriptions {
				max_per_connection 100
				init_timeout 1s
			}`

const loanEventsSub = `subscription { loanEvents { kind loan { id } } }`

// gqlErrors are the errors of an error message's payload.
type gqlErrors []struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
	} `json:"extensions"`
}

// subscriptionsTerminated is subscriptionsGuard with the guard terminating
// the sockets itself (docs/caddyfile.md "Terminated subscriptions").
const subscriptionsTerminated = `
			subscriptions {
				max_per_connection 100
				init_timeout 1s
				upstream ws://{$ANY_UPSTREAM}/graphql
				upstream_header X-Civic-Identity {http.request.header.X-Civic-Identity}
			}`

func TestSubscriptionsHostile(t *testing.T) { subscriptionsHostile(t, subscriptionsGuard) }

// TestSubscriptionsHostileTerminated: the same clients against the guard
// terminating the sockets.
func TestSubscriptionsHostileTerminated(t *testing.T) {
	subscriptionsHostile(t, subscriptionsTerminated)
}

func subscriptionsHostile(t *testing.T, guardOptions string) {
	a, keys := startAnyBackend(t, guardOptions, "partner", "partner", "partner", "partner")
	const mib = 1 << 20

	t.Run("no connection_init: closed 4408 after init_timeout", func(t *testing.T) {
		// Timed from before the dial: the gateway's timer starts after it
		// began, so no close comes sooner than init_timeout 1s on any machine;
		// the upper bound only tells the configured 1s from the default 10s
		// (which cannot close sooner than 10s), leaving 9s for a loaded one.
		start := time.Now()
		w := a.dialWS(keys[0])
		code, reason := w.awaitClose(15 * time.Second)
		took := time.Since(start)
		if code != 4408 || reason != "Connection initialisation timeout" {
			t.Fatalf("close %d %q, want 4408 \"Connection initialisation timeout\"", code, reason)
		}
		if took < time.Second || took >= 10*time.Second {
			t.Fatalf("closed after %v, want after init_timeout 1s and before the default 10s", took)
		}
	})

	t.Run("10 000 subscribes on one socket", func(t *testing.T) {
		const n, bound = 10_000, 100
		heapBefore := a.metric(heapMetric)
		opsBefore := a.Up.opsWith("loanEvents")
		w := a.dialWS(keys[1])
		w.init()
		start := time.Now()
		writeErr := make(chan error, 1)
		go func() {
			var buf []byte
			for i := range n {
				buf = append(buf, frame(true, opText, fmt.Appendf(nil, `{"id":"s%d","type":"subscribe","payload":{"query":%q}}`, i, loanEventsSub))...)
				if len(buf) > 64<<10 || i == n-1 {
					if err := w.write(buf); err != nil {
						writeErr <- err
						return
					}
					buf = buf[:0]
				}
			}
			writeErr <- nil
		}()
		answered := map[string]string{}
		for len(answered) < n-bound {
			m := w.next(time.Now().Add(msgWithin))
			if m.Type != "error" {
				t.Fatalf("message %d: %+v, want an error message for a subscribe over the bound", len(answered), m)
			}
			var errs gqlErrors
			if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) == 0 {
				t.Fatalf("error payload %s: %v", m.Payload, err)
			}
			if errs[0].Extensions.Code != "SUBSCRIPTION_LIMIT" {
				t.Fatalf("refusal %s, want SUBSCRIPTION_LIMIT", m.Payload)
			}
			if _, dup := answered[m.ID]; dup {
				t.Fatalf("two answers for %s", m.ID)
			}
			answered[m.ID] = "error"
		}
		if err := <-writeErr; err != nil {
			t.Fatalf("writing the subscribes: %v", err)
		}
		stack.WaitFor(t, 10*time.Second, "the engine holds the admitted subscriptions", func() error {
			if got := a.Events.Subscribers(); got != bound {
				return fmt.Errorf("engine holds %d subscriptions, want %d", got, bound)
			}
			return nil
		})
		// The admitted ones answer with the next event.
		a.Events.Publish(&library.LoanEvent{Kind: library.LoanEventKindBorrowed, Loan: &library.Loan{ID: "flood-loan", BookID: "b1", MemberID: "m1"}})
		for range bound {
			m := w.next(time.Now().Add(msgWithin))
			if m.Type != "next" || !strings.Contains(string(m.Payload), "flood-loan") {
				t.Fatalf("after the event: %+v", m)
			}
			if prev, dup := answered[m.ID]; dup {
				t.Fatalf("%s answered %s and next", m.ID, prev)
			}
			answered[m.ID] = "next"
		}
		for i := range n {
			if _, ok := answered[fmt.Sprintf("s%d", i)]; !ok {
				t.Fatalf("subscribe s%d got no answer", i)
			}
		}
		w.send(`{"type":"ping"}`)
		if m := w.next(time.Now().Add(10 * time.Second)); m.Type != "pong" {
			t.Fatalf("ping answered with %+v", m)
		}
		took := time.Since(start)
		if got := a.Up.opsWith("loanEvents") - opsBefore; got > bound {
			t.Fatalf("the engine received %d subscriptions, at most %d may pass", got, bound)
		}
		heapAfter := a.metric(heapMetric)
		t.Logf("%d subscribes answered in %v; gateway heap in use %.1f → %.1f MiB", n, took, heapBefore/mib, heapAfter/mib)
		if heapAfter-heapBefore > 64*mib {
			t.Fatalf("gateway heap in use grew by %.1f MiB", (heapAfter-heapBefore)/mib)
		}
		w.c.Close()
		stack.WaitFor(t, 10*time.Second, "subscriptions end with the socket", func() error {
			if got := a.Events.Subscribers(); got != 0 {
				return fmt.Errorf("engine still holds %d", got)
			}
			return nil
		})
	})

	t.Run("subscribe carrying the key is refused and never forwarded", func(t *testing.T) {
		key := keys[2]
		w := a.dialWS(key)
		w.init()
		before := a.Up.opsWith("loanEvents")
		w.send(fmt.Sprintf(`{"id":"k1","type":"subscribe","payload":{"query":"subscription S($note: String) { loanEvents { kind } }","variables":{"note":%q}}}`, key))
		m := w.next(time.Now().Add(10 * time.Second))
		var errs gqlErrors
		if m.Type != "error" || m.ID != "k1" || json.Unmarshal(m.Payload, &errs) != nil || len(errs) == 0 ||
			errs[0].Message != "Request must not contain the bearer token" {
			t.Fatalf("answer %+v %s, want the bearer-token refusal", m, m.Payload)
		}
		if strings.Contains(string(m.Payload), key) {
			t.Fatal("the refusal echoes the key")
		}
		w.send(`{"type":"ping"}`)
		if m := w.next(time.Now().Add(10 * time.Second)); m.Type != "pong" {
			t.Fatalf("ping answered with %+v", m)
		}
		if got := a.Up.opsWith("loanEvents") - before; got != 0 {
			t.Fatalf("the engine received %d subscriptions", got)
		}
		if a.Up.saw(key) {
			t.Fatal("the engine received the key")
		}
		// The logs are checked for the key when the test ends.
	})

	t.Run("oversized frames", func(t *testing.T) {
		key := keys[3]
		before := a.Up.opsWith("loanEvents")
		t.Run("one 1 MiB text frame: 1009", func(t *testing.T) {
			w := a.dialWS(key)
			w.init()
			big := fmt.Sprintf(`{"id":"big","type":"subscribe","payload":{"query":%q,"extensions":{"pad":"%s"}}}`, loanEventsSub, strings.Repeat("x", mib))
			go func() { _ = w.write(frame(true, opText, []byte(big))) }()
			if code, reason := w.awaitClose(15 * time.Second); code != 1009 {
				t.Fatalf("close %d %q, want 1009", code, reason)
			}
		})
		t.Run("a header announcing 2^62 bytes: 1009 without the payload", func(t *testing.T) {
			heapBefore := a.metric(heapMetric)
			w := a.dialWS(key)
			w.init()
			// Only the header is sent: a close can only come from the header.
			if err := w.write(frameHeader(true, opText, 1<<62, [4]byte{1, 2, 3, 4})); err != nil {
				t.Fatal(err)
			}
			if code, reason := w.awaitClose(15 * time.Second); code != 1009 {
				t.Fatalf("close %d %q, want 1009", code, reason)
			}
			if heapAfter := a.metric(heapMetric); heapAfter-heapBefore > 64*mib {
				t.Fatalf("gateway heap in use grew by %.1f MiB", (heapAfter-heapBefore)/mib)
			}
		})
		t.Run("fragments summing over max_body: 1009", func(t *testing.T) {
			w := a.dialWS(key)
			w.init()
			msg := fmt.Sprintf(`{"id":"frag","type":"subscribe","payload":{"query":%q,"extensions":{"pad":"%s"}}}`, loanEventsSub, strings.Repeat("y", 192<<10))
			part := len(msg) / 4 // each fragment is under 128 KiB
			var frames []byte
			for i := 0; i < 4; i++ {
				op := byte(opCont)
				if i == 0 {
					op = opText
				}
				end := (i + 1) * part
				if i == 3 {
					end = len(msg)
				}
				frames = append(frames, frame(i == 3, op, []byte(msg[i*part:end]))...)
			}
			go func() { _ = w.write(frames) }()
			if code, reason := w.awaitClose(15 * time.Second); code != 1009 {
				t.Fatalf("close %d %q, want 1009", code, reason)
			}
		})
		if got := a.Up.opsWith("loanEvents") - before; got != 0 {
			t.Fatalf("the engine received %d subscriptions from oversized messages", got)
		}
		a.alive(key)
	})
}
