package gqlguard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe"
)

// The guard is the subscription shell's subscribe.Pipeline (docs/design.md
// D61): a WebSocket's subscribe messages go through the request pipeline a
// POST goes through, and the shell's outcomes are counted on the request
// metric.
var _ subscribe.Pipeline = (*Guard)(nil)

// OpenSocket reads the caller of a WebSocket upgrade once.
func (g *Guard) OpenSocket(r *http.Request, repl *caddy.Replacer) subscribe.Socket {
	scope := g.scopeOf(r, repl)
	scope.via = viaWebSocket
	// Each message is checked in the context it comes with (CheckSubscribe);
	// a terminated socket outlives the request, so the checker keeps none
	// of the request's (net/http's connection state and buffers).
	scope.ctx = nil
	c := &subscribeChecker{g: g, scope: scope}
	if q, ok := contract.RequestFrom(r.Context()); ok {
		c.recorder = q.OperationRecorder()
	}
	return subscribe.Socket{Checker: c, Token: scope.token, KeyID: scope.keyID}
}

// Refused counts a request the subscription shell refused.
func (g *Guard) Refused(outcome string) { g.metrics.requests.WithLabelValues(outcome).Inc() }

// Allowed counts a request the subscription shell admitted.
func (g *Guard) Allowed() { g.metrics.allowed.Inc() }

// subscribeChecker checks one subscribe message's payload as a POST body,
// for the caller read when the socket was opened, and hands each admitted
// operation to the rate limiter's usage per operation (docs/design.md D76):
// a socket's messages have no request of their own to publish it on.
type subscribeChecker struct {
	g        *Guard
	scope    requestScope
	recorder contract.OperationRecorder // nil: operations not counted
}

func (s *subscribeChecker) CheckSubscribe(ctx context.Context, payload []byte) (forward, errs []byte, failed func()) {
	var (
		rec     refusalRecorder
		adm     admitted
		arrived time.Time
	)
	if s.recorder != nil {
		arrived = time.Now()
	}
	span := startSubscribeSpan(ctx)
	outcome := func() (outcome string) {
		defer func() {
			if v := recover(); v != nil {
				s.g.logger.Error("graphql_guard internal error", zap.String("panic", fmt.Sprintf("%T", v)))
				rec, errs = refusalRecorder{}, nil
				writeJSON(&rec, http.StatusInternalServerError, contract.BodyInternal)
				outcome = outcomeInternal
			}
		}()
		req, outcome := locateBody(&rec, payload)
		if outcome != "" {
			return outcome
		}
		scope := s.scope
		scope.ctx = ctx
		adm, outcome = s.g.checkLocated(&rec, &scope, payload, &req)
		if outcome != "" {
			return outcome
		}
		if outcome, errs = s.g.chargeSubscribe(ctx, scope.budget, adm.op, adm.co.Cost); outcome != "" {
			return outcome
		}
		forward = adm.body
		return ""
	}()
	if outcome != "" {
		endGuardSpan(span, &adm, outcome)
		s.g.metrics.requests.WithLabelValues(outcome).Inc()
		if errs == nil {
			_, errs = refusalErrors(rec.status, rec.body, rec.Header().Get(contract.HeaderRefusedFamily))
		}
		return nil, errs, nil
	}
	endGuardSpan(span, &adm, outcomeAllowed)
	s.g.metrics.allowed.Inc()
	if s.recorder != nil {
		// The operation as a POST publishes it (its shape included); the
		// cost is what the budget was charged, none without one (D70). The
		// latency ends at admission: graphql-transport-ws acknowledges a
		// subscribe with no message of its own (D76).
		var cost int64
		if s.scope.budget != nil {
			cost = adm.co.Cost
		}
		op, rec := &adm.op.Published, s.recorder
		rec.RecordOperation(op, cost, time.Since(arrived))
		// The upstream's error message for it counts one error on the same
		// row (docs/design.md D83); the compiled operation is shared and
		// lives as long as the closure.
		failed = func() { rec.RecordOperationError(op, arrived) }
	}
	return forward, nil, failed
}

// eventStream is an admitted graphql-sse request for the shell: charged
// once its subscription slot is held.
// The charge captures copies, not adm: ServeHTTP's admitted stays on its
// stack for every other request (bench TestGatewayAddedAllocations).
func (g *Guard) eventStream(adm *admitted) subscribe.EventStream {
	op, cost := adm.op, adm.co.Cost
	return subscribe.EventStream{
		Subscription: op.Kind == ast.Subscription,
		KeyID:        adm.keyID,
		Body:         adm.body,
		Charge: func(ctx context.Context, w http.ResponseWriter, budget contract.CostBudget) string {
			return g.chargeCost(ctx, w, budget, op, cost)
		},
	}
}
