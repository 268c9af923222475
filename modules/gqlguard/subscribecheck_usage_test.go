package gqlguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/contract"
)

// Usage per operation of a WebSocket's subscribes (docs/design.md D76): the
// guard hands each subscribe it admits — and none it refuses — to the
// upgrade's OperationRecorder, with the operation a POST publishes (its
// shape included), the cost it charged and the time its admission took.

// recordedOperation is one RecordOperation call.
type recordedOperation struct {
	op      *contract.GraphQLOperation
	cost    int64
	latency time.Duration
}

// operationLog is a contract.OperationRecorder keeping its calls.
type operationLog struct {
	mu     sync.Mutex
	calls  []recordedOperation
	failed []*contract.GraphQLOperation // RecordOperationError's
}

func (l *operationLog) RecordOperationError(op *contract.GraphQLOperation, _ time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed = append(l.failed, op)
}

func (l *operationLog) RecordOperation(op *contract.GraphQLOperation, cost int64, latency time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, recordedOperation{op, cost, latency})
}

func (l *operationLog) recorded() []recordedOperation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// recorderHook is what test_operation_recorder attaches, as civic_rate_limit
// attaches its recorder (and budget) to an upgrade.
type recorderHook struct {
	recorder contract.OperationRecorder
	budget   contract.CostBudget
}

var currentRecorderHook atomic.Pointer[recorderHook]

type operationRecorderHandler struct{}

func (operationRecorderHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.test_operation_recorder", New: func() caddy.Module { return new(operationRecorderHandler) }}
}

func (operationRecorderHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h := currentRecorderHook.Load(); h != nil {
		r, q := contract.AttachRequest(r)
		q.SetOperationRecorder(h.recorder)
		if h.budget != nil {
			q.SetCostBudget(h.budget)
		}
		return next.ServeHTTP(w, r)
	}
	return next.ServeHTTP(w, r)
}

func init() {
	caddy.RegisterModule(operationRecorderHandler{})
	httpcaddyfile.RegisterHandlerDirective("test_operation_recorder", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		h.Next()
		return operationRecorderHandler{}, nil
	})
}

func TestSubscribeRecordsOperation(t *testing.T) {
	up := &wsUpstream{}
	upstream := httptest.NewServer(http.HandlerFunc(up.serve))
	t.Cleanup(upstream.Close)
	log, budget := &operationLog{}, &budgetRecorder{}
	currentRecorderHook.Store(&recorderHook{recorder: log, budget: budget})
	t.Cleanup(func() { currentRecorderHook.Store(nil) })
	s := startCaddy(t, fmt.Sprintf(`
	route /ws {
		test_operation_recorder
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
		return send(wsMessage{Type: "subscribe", ID: id, Payload: json.RawMessage(`{"query":` + jsonString(query) + `}`)})
	}
	if reply := subscribe("one", loanEventsSub); reply.Type != "next" {
		t.Fatalf("admitted subscribe: %+v", reply)
	}
	if reply := subscribe("invalid", `subscription { nope }`); reply.Type != "error" {
		t.Fatalf("invalid subscribe: %+v", reply)
	}
	budget.setDecide(overBudget)
	if reply := subscribe("over", loanEventsSub); reply.Type != "error" {
		t.Fatalf("subscribe over the budget: %+v", reply)
	}
	budget.setDecide(nil)
	if reply := subscribe("two", loanEventsSub); reply.Type != "next" {
		t.Fatalf("second admitted subscribe: %+v", reply)
	}

	calls := log.recorded()
	if len(calls) != 2 {
		t.Fatalf("%d operations recorded, want the 2 admitted subscribes: %+v", len(calls), calls)
	}
	cost := referenceCost(t, testdataSchema(t, "testdata/library.graphqls"), loanEventsSub, "Events")
	for _, c := range calls {
		op := c.op
		if op.Type != "subscription" || op.Name != "Events" || len(op.DocumentHash) != 64 || op.Shape == nil ||
			!slices.Contains(op.Shape.Coordinates, "Subscription.loanEvents") || op.Shape.Normalized == "" {
			t.Fatalf("recorded operation %+v (shape %+v)", op, op.Shape)
		}
		if c.cost != cost || c.latency <= 0 || c.latency > 10*time.Second {
			t.Errorf("recorded cost %d (want %d), latency %v", c.cost, cost, c.latency)
		}
	}
	if calls[0].op != calls[1].op {
		t.Errorf("the two subscribes of one document recorded different operations: %p %p", calls[0].op, calls[1].op)
	}
}
