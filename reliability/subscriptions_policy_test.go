package reliability

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// policyGuard bounds cost and subscriptions per key so that both can be
// crossed on purpose.
const policyGuard = `
			max_cost 1
			subscriptions {
				max_per_connection 100
				max_per_key 3
			}`

// TestSubscribeIsCheckedLikeAPost: a subscribe message meets the guard's
// checks with the codes a POST gets (parse, validation, cost), on a socket
// that stays open; subscriptions per key are bounded across sockets; and a
// bad key is refused before the upgrade with the HTTP body (docs/design.md
// D22), through the real binary in front of the real engine.
func TestSubscribeIsCheckedLikeAPost(t *testing.T) {
	a, keys := startAnyBackend(t, policyGuard, "partner")
	key := keys[0]

	t.Run("bad key refused before the upgrade", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, a.URL, nil)
		for k, v := range map[string]string{
			"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
			"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": "graphql-transport-ws",
			"Authorization": "Bearer cg_live_" + strings.Repeat("x", 43),
		} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || string(body) != `{"error":"Invalid API key"}` {
			t.Fatalf("upgrade with an unknown key: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("refusal codes match a POST's", func(t *testing.T) {
		w := a.dialWS(key)
		w.init()
		for i, tc := range []struct{ query, code string }{
			{`subscription { loanEvents { kind `, "GRAPHQL_PARSE_FAILED"},
			{`subscription { loanEvents { nope } }`, "GRAPHQL_VALIDATION_FAILED"},
			{`subscription { loanEvents { loan { id } } }`, "QUERY_TOO_COMPLEX"}, // cost 2 > max_cost 1
		} {
			payload, _ := json.Marshal(map[string]string{"query": tc.query})
			id := string(rune('a' + i))
			w.send(`{"id":"` + id + `","type":"subscribe","payload":` + string(payload) + `}`)
			m := w.next(time.Now().Add(msgWithin))
			if m.Type != "error" || m.ID != id || !strings.Contains(string(m.Payload), `"code":"`+tc.code+`"`) {
				t.Fatalf("%s: %+v, want an error with %s", tc.query, m, tc.code)
			}
			if tc.code != "QUERY_TOO_COMPLEX" { // a POST cannot carry a subscription past the transport check
				status, body := a.post(key, string(append(append([]byte(`{"query":`), mustJSON(tc.query)...), '}')))
				if status != http.StatusOK || !strings.Contains(body, `"code":"`+tc.code+`"`) {
					t.Fatalf("%s over POST: %d %s, want %s", tc.query, status, body, tc.code)
				}
			}
		}
		// Still open, and a subscription within the policy passes.
		w.send(`{"id":"ok","type":"subscribe","payload":{"query":"subscription { loanEvents { kind } }"}}`)
		awaitEngineSubscribers(t, a, 1)
	})

	t.Run("max_per_key across sockets", func(t *testing.T) {
		before := a.Events.Subscribers()
		w1, w2 := a.dialWS(key), a.dialWS(key)
		w1.init()
		w2.init()
		// The socket of the previous subtest still holds one: two more fill max_per_key 3.
		w1.send(`{"id":"x1","type":"subscribe","payload":{"query":"subscription { loanEvents { kind } }"}}`)
		w2.send(`{"id":"y1","type":"subscribe","payload":{"query":"subscription { loanEvents { kind } }"}}`)
		awaitEngineSubscribers(t, a, before+2)
		w2.send(`{"id":"y2","type":"subscribe","payload":{"query":"subscription { loanEvents { kind } }"}}`)
		m := w2.next(time.Now().Add(msgWithin))
		if m.Type != "error" || m.ID != "y2" || !strings.Contains(string(m.Payload), `"message":"Too many subscriptions for this key","extensions":{"code":"SUBSCRIPTION_LIMIT"}`) {
			t.Fatalf("fourth subscription of the key: %+v", m)
		}
		// Completing one frees its slot for the other socket.
		w1.send(`{"id":"x1","type":"complete"}`)
		awaitEngineSubscribers(t, a, before+1)
		w2.send(`{"id":"y3","type":"subscribe","payload":{"query":"subscription { loanEvents { kind } }"}}`)
		awaitEngineSubscribers(t, a, before+2)
	})
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// awaitEngineSubscribers waits until the engine holds n subscriptions.
func awaitEngineSubscribers(t *testing.T, a *anyBackend, n int) {
	t.Helper()
	stack.WaitFor(t, 10*time.Second, "subscriptions at the engine", func() error {
		if got := a.Events.Subscribers(); got != n {
			return fmt.Errorf("engine holds %d, want %d", got, n)
		}
		return nil
	})
}
