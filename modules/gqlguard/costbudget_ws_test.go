package gqlguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/coder/websocket"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// The cost budget on a graphql-transport-ws socket: each subscribe that
// passes every check spends its cost (no response header: Spend gets nil);
// the refusals are the `error` messages of the Charger's refusals (same
// payload, byte for byte) or of max_cost, and the socket stays open.

// wsMessage is one graphql-transport-ws message.
type wsMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsUpstream is a graphql-transport-ws server that acknowledges the
// connection and answers every subscribe with one next message, recording
// the ids it was sent.
type wsUpstream struct {
	mu  sync.Mutex
	ids []string
}

func (u *wsUpstream) serve(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wsproxy.Subprotocol}})
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	ctx := r.Context()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m wsMessage
		if json.Unmarshal(data, &m) != nil {
			return
		}
		var reply wsMessage
		switch m.Type {
		case "connection_init":
			reply = wsMessage{Type: "connection_ack"}
		case "subscribe":
			u.mu.Lock()
			u.ids = append(u.ids, m.ID)
			u.mu.Unlock()
			reply = wsMessage{Type: "next", ID: m.ID, Payload: json.RawMessage(`{"data":{"loanEvents":{"kind":"BORROWED"}}}`)}
		default:
			continue
		}
		out, _ := json.Marshal(reply)
		if c.Write(ctx, websocket.MessageText, out) != nil {
			return
		}
	}
}

func (u *wsUpstream) subscribed() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ids...)
}

// scriptedCharger is a contract.Charger whose next answers the test sets.
type scriptedCharger struct{ mode atomic.Int32 } // 0 allow, 1 no room for 2.5 s, 2 store failed

func (c *scriptedCharger) Charge(context.Context) (bool, time.Duration, error) {
	switch c.mode.Load() {
	case 1:
		return false, 2500 * time.Millisecond, nil
	case 2:
		return false, 0, errors.New("redis: connection refused")
	}
	return true, 0, nil
}

func (b *budgetRecorder) setDecide(f func(int64) (contract.CostDecision, error)) {
	b.mu.Lock()
	b.decide = f
	b.mu.Unlock()
}

// budgetHook attaches a test's budget and Charger to every request, as
// civic_rate_limit attaches its own: the test handler test_cost_budget.
type budgetHook struct {
	budget  contract.CostBudget
	charger contract.Charger
}

var currentBudgetHook atomic.Pointer[budgetHook]

type costBudgetHandler struct{}

func (costBudgetHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.test_cost_budget", New: func() caddy.Module { return new(costBudgetHandler) }}
}

func (costBudgetHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	h := currentBudgetHook.Load()
	if h == nil {
		return next.ServeHTTP(w, r)
	}
	r, q := contract.AttachRequest(r)
	q.SetCostBudget(h.budget)
	q.SetCharger(h.charger)
	return next.ServeHTTP(w, r)
}

func init() {
	caddy.RegisterModule(costBudgetHandler{})
	httpcaddyfile.RegisterHandlerDirective("test_cost_budget", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		h.Next()
		return costBudgetHandler{}, nil
	})
}

func TestCostBudgetWebSocket(t *testing.T) {
	up := &wsUpstream{}
	upstream := httptest.NewServer(http.HandlerFunc(up.serve))
	t.Cleanup(upstream.Close)
	budget, charger := &budgetRecorder{}, &scriptedCharger{}
	currentBudgetHook.Store(&budgetHook{budget: budget, charger: charger})
	t.Cleanup(func() { currentBudgetHook.Store(nil) })
	s := startCaddy(t, fmt.Sprintf(`
	route /ws {
		test_cost_budget
		graphql_guard {
			schema %s
		}
		reverse_proxy %s
	}`, testdataPath(t, "library.graphqls"), upstream.Listener.Addr().String()))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := dialWS(t, ctx, s.base, nil).exchange
	if ack := send(wsMessage{Type: "connection_init"}); ack.Type != "connection_ack" {
		t.Fatalf("connection_init: %+v", ack)
	}
	subscribe := func(id, query string) wsMessage {
		t.Helper()
		reply := send(wsMessage{Type: "subscribe", ID: id, Payload: json.RawMessage(`{"query":` + jsonString(query) + `}`)})
		if reply.ID != id {
			t.Fatalf("subscribe %s answered for %q: %+v", id, reply.ID, reply)
		}
		return reply
	}
	refused := func(id, query string) string {
		t.Helper()
		reply := subscribe(id, query)
		if reply.Type != "error" {
			t.Fatalf("subscribe %s: %s %s, want an error message", id, reply.Type, reply.Payload)
		}
		return string(reply.Payload)
	}

	if reply := subscribe("ok", loanEventsSub); reply.Type != "next" {
		t.Fatalf("admitted subscribe: %+v", reply)
	}

	budget.setDecide(retryIn(2500 * time.Millisecond))
	noRoom := refused("budget-429", loanEventsSub)
	budget.setDecide(nil)
	charger.mode.Store(1)
	chargerNoRoom := refused("charger-429", loanEventsSub)
	charger.mode.Store(0)
	if want := `[{"message":"Rate limit exceeded","extensions":{"code":"RATE_LIMITED","retryAfter":3}}]`; noRoom != want || noRoom != chargerNoRoom {
		t.Errorf("no room: %s, want %s, the Charger's refusal %s", noRoom, want, chargerNoRoom)
	}

	budget.setDecide(storeFailed)
	failed := refused("budget-500", loanEventsSub)
	budget.setDecide(nil)
	charger.mode.Store(2)
	chargerFailed := refused("charger-500", loanEventsSub)
	charger.mode.Store(0)
	if want := `[{"message":"Internal Server Error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]`; failed != want || failed != chargerFailed {
		t.Errorf("store failed: %s, want %s, the Charger's refusal %s", failed, want, chargerFailed)
	}

	budget.setDecide(overBudget)
	over := refused("over", loanEventsSub)
	budget.setDecide(nil)
	cost := referenceCost(t, testdataSchema(t, "testdata/library.graphqls"), loanEventsSub, "Events")
	if want := `[{"message":"Query cost ` + jsonNumber(int(cost)) + ` exceeds the cost budget of 50000 points per hour","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_COMPLEX"}}]`; over != want {
		t.Errorf("over the whole budget: %s, want %s", over, want)
	}

	before, _ := budget.calls()
	if invalid := refused("invalid", `subscription { nope }`); !strings.Contains(invalid, "GRAPHQL_VALIDATION_FAILED") {
		t.Errorf("invalid subscribe: %s", invalid)
	}
	if after, _ := budget.calls(); len(after) != len(before) {
		t.Errorf("a refused subscribe spent: %v", after[len(before):])
	}

	if reply := subscribe("still-open", loanEventsSub); reply.Type != "next" {
		t.Fatalf("after the refusals: %+v", reply)
	}
	if got := strings.Join(up.subscribed(), ","); got != "ok,still-open" {
		t.Errorf("the upstream received subscribes %s, want ok,still-open", got)
	}
	spent, headers := budget.calls()
	if len(spent) != 5 { // ok, budget-429, budget-500, over, still-open
		t.Fatalf("spent %v, want 5 spends", spent)
	}
	for i := range spent {
		if spent[i] != cost || headers[i] {
			t.Errorf("spend %d: %d points (with a header: %v), want %d and no header", i, spent[i], headers[i], cost)
		}
	}
}
