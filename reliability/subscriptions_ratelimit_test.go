package reliability

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestSubscribesChargeTheKeysRateLimit: every subscribe on a socket is
// charged to the key's rate limit like a POST (docs/design.md D22). Tier
// trickle allows 3 an hour: the upgrade takes one, two subscribes the rest,
// the third subscribe is refused RATE_LIMITED on an open socket without
// reaching the engine, and the key's next POST is 429.
func TestSubscribesChargeTheKeysRateLimit(t *testing.T) {
	a, keys := startAnyBackend(t, subscriptionsGuard, "trickle")
	key := keys[0]
	w := a.dialWS(key)
	w.init()
	opsBefore := a.Up.opsWith("loanEvents")

	w.send(`{"id":"a","type":"subscribe","payload":{"query":"` + loanEventsSub + `"}}`)
	w.send(`{"id":"b","type":"subscribe","payload":{"query":"` + loanEventsSub + `"}}`)
	w.send(`{"id":"c","type":"subscribe","payload":{"query":"` + loanEventsSub + `"}}`)
	m := w.next(time.Now().Add(msgWithin))
	if m.Type != "error" || m.ID != "c" {
		t.Fatalf("third subscribe: %+v, want an error for c", m)
	}
	var errs []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code       string `json:"code"`
			RetryAfter int64  `json:"retryAfter"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) != 1 {
		t.Fatalf("error payload %s: %v", m.Payload, err)
	}
	if e := errs[0]; e.Message != "Rate limit exceeded" || e.Extensions.Code != "RATE_LIMITED" || e.Extensions.RetryAfter <= 0 {
		t.Fatalf("refusal %s, want Rate limit exceeded / RATE_LIMITED with a retryAfter", m.Payload)
	}
	// The two charged subscribes reached the engine; the refused one did not.
	stack.WaitFor(t, 10*time.Second, "the two charged subscribes at the engine", func() error {
		if got := a.Up.opsWith("loanEvents") - opsBefore; got != 2 {
			return fmt.Errorf("engine ran %d loanEvents operations", got)
		}
		return nil
	})
	// The socket stays open: a ping is answered.
	if err := w.write(frame(true, opPing, []byte("still"))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(msgWithin); ; {
		f, err := w.read(deadline)
		if err != nil {
			t.Fatalf("no pong: %v", err)
		}
		if f.op == opPong {
			break
		}
	}
	if status, body := a.post(key, `{"query":"{ authors { name } }"}`); status != http.StatusTooManyRequests || body != `{"error":"Rate limit exceeded"}` {
		t.Fatalf("POST after the socket spent the quota: %d %s", status, body)
	}
	if got := a.Up.opsWith("loanEvents") - opsBefore; got != 2 {
		t.Fatalf("the engine ran %d loanEvents subscriptions, want 2", got)
	}
	// The refusal is counted with the guard's other outcomes.
	if got := a.metric(`civicgate_graphql_guard_requests_total{outcome="rate_limited"}`); got != 1 {
		t.Fatalf("rate_limited outcomes counted: %v, want 1", got)
	}
}
