package reliability

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Frames shaped to slip past the terminator's checks (the guard answering
// the socket itself, subscriptions deduplicated per key): a subscribe
// fragmented so the key straddles two frames, one id reused across dedup
// groups, subscribes racing their own complete.
func TestSubscriptionsTerminatedHostile(t *testing.T) {
	a, keys := startAnyBackend(t, `
			subscriptions {
				max_per_connection 100
				init_timeout 5s
				upstream ws://{$ANY_UPSTREAM}/graphql
				upstream_header X-Civic-Identity {http.request.header.X-Civic-Identity}
				dedup key
			}`, "partner", "partner", "partner")
	within := func() time.Time { return time.Now().Add(15 * time.Second) }
	pong := func(w *wsConn) {
		t.Helper()
		w.send(`{"type":"ping"}`)
		if m := w.next(within()); m.Type != "pong" {
			t.Fatalf("ping answered with %+v %s", m, m.Payload)
		}
	}

	t.Run("a subscribe fragmented with the key across two frames is refused", func(t *testing.T) {
		key := keys[0]
		w := a.dialWS(key)
		w.init()
		before := a.Up.opsWith("loanEvents")
		msg := fmt.Sprintf(`{"id":"f1","type":"subscribe","payload":{"query":%q,"variables":{"note":%q}}}`, loanEventsSub, key)
		cut := strings.Index(msg, key) + len(key)/2
		parts := []string{msg[:cut-7], msg[cut-7 : cut], msg[cut:]}
		var buf []byte
		buf = append(buf, frame(false, opText, []byte(parts[0]))...)
		buf = append(buf, frame(false, 0x0, []byte(parts[1]))...)
		buf = append(buf, frame(true, 0x0, []byte(parts[2]))...)
		if err := w.write(buf); err != nil {
			t.Fatal(err)
		}
		m := w.next(within())
		var errs gqlErrors
		if m.Type != "error" || m.ID != "f1" || json.Unmarshal(m.Payload, &errs) != nil || len(errs) == 0 ||
			errs[0].Extensions.Code != "BAD_REQUEST" {
			t.Fatalf("answer %+v %s, want the bearer-token refusal", m, m.Payload)
		}
		pong(w)
		if got := a.Up.opsWith("loanEvents") - before; got != 0 || a.Up.saw(key) {
			t.Fatalf("the engine received %d subscriptions (the key: %v)", got, a.Up.saw(key))
		}
	})

	t.Run("one id reused across dedup groups", func(t *testing.T) {
		key := keys[1]
		one, two := a.dialWS(key), a.dialWS(key)
		one.init()
		two.init()
		kinds := `subscription { loanEvents { kind } }`
		ids := `subscription { loanEvents { loan { id } } }`
		one.send(fmt.Sprintf(`{"id":"a","type":"subscribe","payload":{"query":%q}}`, kinds))
		two.send(fmt.Sprintf(`{"id":"a","type":"subscribe","payload":{"query":%q}}`, kinds))
		pong(one)
		pong(two)
		// "a" moves to another group on one socket; the other keeps its own.
		one.send(`{"id":"a","type":"complete"}`)
		one.send(fmt.Sprintf(`{"id":"a","type":"subscribe","payload":{"query":%q}}`, ids))
		pong(one)
		stack.WaitFor(t, 10*time.Second, "two groups at the engine", func() error {
			if got := a.Events.Subscribers(); got != 2 {
				return fmt.Errorf("engine holds %d", got)
			}
			return nil
		})
		a.Events.Publish(&library.LoanEvent{Kind: library.LoanEventKindBorrowed, Loan: &library.Loan{ID: "reuse", BookID: "b1", MemberID: "m1"}})
		if m := one.next(within()); m.Type != "next" || m.ID != "a" || string(m.Payload) != `{"data":{"loanEvents":{"loan":{"id":"reuse"}}}}` {
			t.Fatalf("socket one: %+v %s", m, m.Payload)
		}
		if m := two.next(within()); m.Type != "next" || m.ID != "a" || string(m.Payload) != `{"data":{"loanEvents":{"kind":"BORROWED"}}}` {
			t.Fatalf("socket two: %+v %s", m, m.Payload)
		}
		pong(one) // nothing else arrived for "a" from the old group
		one.c.Close()
		two.c.Close()
		stack.WaitFor(t, 10*time.Second, "no subscription left at the engine", func() error {
			if got := a.Events.Subscribers(); got != 0 {
				return fmt.Errorf("engine holds %d", got)
			}
			return nil
		})
	})

	t.Run("subscribes racing their complete leave nothing behind", func(t *testing.T) {
		key := keys[2]
		w := a.dialWS(key)
		w.init()
		var buf []byte
		for i := range 300 {
			buf = append(buf, frame(true, opText, fmt.Appendf(nil, `{"id":"r%d","type":"subscribe","payload":{"query":%q}}`, i, loanEventsSub))...)
			buf = append(buf, frame(true, opText, fmt.Appendf(nil, `{"id":"r%d","type":"complete"}`, i))...)
		}
		if err := w.write(buf); err != nil {
			t.Fatal(err)
		}
		pong(w)
		stack.WaitFor(t, 10*time.Second, "no subscription left at the engine", func() error {
			if got := a.Events.Subscribers(); got != 0 {
				return fmt.Errorf("engine holds %d", got)
			}
			return nil
		})
		// Every slot came back: the socket's whole bound is free again.
		for i := range 100 {
			w.send(fmt.Sprintf(`{"id":"again%d","type":"subscribe","payload":{"query":%q}}`, i, loanEventsSub))
		}
		pong(w) // a SUBSCRIPTION_LIMIT refusal would be read here instead
	})
}

// TestSubscriptionsTerminatedGETHostile: event streams sent as GET, which
// the guard now terminates itself (methods GET POST), shaped to slip past
// it: the key in the variables parameter (plain, and JSON-escaped past
// civic_auth's look at the URL), and a document whose
// operationName picks a mutation beside the subscription. Each is refused
// before the engine sees anything, with the same answers as a POST would get.
func TestSubscriptionsTerminatedGETHostile(t *testing.T) {
	a, keys := startAnyBackend(t, `
			methods GET POST
			subscriptions {
				upstream ws://{$ANY_UPSTREAM}/graphql
				upstream_header X-Civic-Identity {http.request.header.X-Civic-Identity}
				dedup key
			}`, "partner")
	key := keys[0]
	get := func(params url.Values) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, a.URL+"?"+params.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return resp.StatusCode, string(b)
	}
	before := a.Up.opsWith("loanEvents")
	borrows := a.Up.opsWith("borrowBook")

	t.Run("the key inside the variables parameter", func(t *testing.T) {
		st, body := get(url.Values{"query": {`subscription S($note: String) { loanEvents { kind } }`},
			"variables": {`{"note":"` + key + `"}`}})
		// civic_auth meets it first: a key anywhere in the URL is refused
		if st != http.StatusBadRequest || !strings.Contains(body, "API key must not be sent in the URL") || strings.Contains(body, key) {
			t.Fatalf("answer %d %s, want 400: the key-in-URL refusal, without the key", st, body)
		}
	})
	t.Run("the key JSON-escaped inside the variables parameter", func(t *testing.T) {
		escaped := fmt.Sprintf(`\u%04x`, key[0]) + key[1:] // the same string once decoded, not the key's bytes
		st, body := get(url.Values{"query": {`subscription S($note: String) { loanEvents { kind } }`},
			"variables": {`{"note":"` + escaped + `"}`}})
		// past civic_auth's look at the URL; the guard decodes the JSON string
		if st != http.StatusBadRequest || body != `{"errors":[{"message":"Request must not contain the bearer token"}]}` {
			t.Fatalf("answer %d %s, want the guard's bearer-token refusal", st, body)
		}
	})
	t.Run("operationName picks a mutation beside the subscription", func(t *testing.T) {
		doc := `subscription S { loanEvents { kind } } mutation M { borrowBook(bookId: "b1") { id } }`
		st, body := get(url.Values{"query": {doc}, "operationName": {"M"}})
		if st != http.StatusMethodNotAllowed {
			t.Fatalf("a mutation over a GET event stream: %d %s, want 405 (GraphQL over HTTP: no mutation over GET)", st, body)
		}
	})
	if got := a.Up.opsWith("loanEvents") - before; got != 0 || a.Up.saw(key) {
		t.Fatalf("the engine received %d subscriptions (the key: %v)", got, a.Up.saw(key))
	}
	if got := a.Up.opsWith("borrowBook") - borrows; got != 0 {
		t.Fatalf("the engine received %d borrowBook operations", got)
	}
}
