package gqlguard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// Subscriptions (docs/design.md D22): a graphql-transport-ws WebSocket is
// checked message by message — every subscribe goes through checkLocated
// exactly like a POST, is charged to the key's rate limit, counted against
// the bounds and, last, spends its cost on the key's cost budget
// (costbudget.go) — and a graphql-sse event stream is checked like the POST
// it is. Both end when the caller's credential stops being valid.

const (
	defaultMaxPerConnection = 100
	defaultMaxPerKey        = 1000
	defaultInitTimeout      = 10 * time.Second
	msgSubprotocol          = "WebSocket subprotocol must be graphql-transport-ws"
	msgTooManySubscriptions = "Too many subscriptions for this API key"
	codeSubscriptionLimit   = "SUBSCRIPTION_LIMIT"
)

func (g *Guard) maxPerKey() int {
	if g.Subscriptions != nil && g.Subscriptions.MaxPerKey > 0 {
		return g.Subscriptions.MaxPerKey
	}
	return defaultMaxPerKey
}

func (g *Guard) maxPerConnection() int {
	if g.Subscriptions != nil && g.Subscriptions.MaxPerConnection > 0 {
		return g.Subscriptions.MaxPerConnection
	}
	return defaultMaxPerConnection
}

func (g *Guard) initTimeout() time.Duration {
	if g.Subscriptions != nil && g.Subscriptions.InitTimeout > 0 {
		return time.Duration(g.Subscriptions.InitTimeout)
	}
	return defaultInitTimeout
}

// serveWebSocket admits a graphql-transport-ws upgrade and hands reverse_proxy
// a connection whose client messages are checked. (Where subscriptions do not
// pass, ServeHTTP checks the upgrade like any GET instead.)
func (g *Guard) serveWebSocket(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !wsproxy.Offers(r) {
		writeJSON(w, http.StatusBadRequest, messageBody(msgSubprotocol))
		g.metrics.requests.WithLabelValues(outcomeBadRequest).Inc()
		return nil
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	scope := g.scopeOf(r, repl)
	scope.via = viaWebSocket
	cfg := wsproxy.Config{
		Checker:          &subscribeChecker{g: g, scope: scope},
		InitTimeout:      g.initTimeout(),
		MaxMessage:       g.MaxBody,
		MaxSubscriptions: g.maxPerConnection(),
		Token:            scope.token,
		Logger:           g.logger,
		Refused:          func(outcome string) { g.metrics.requests.WithLabelValues(outcome).Inc() },
	}
	if scope.keyID != "" {
		cfg.Slots = g.slots.forKey(scope.keyID)
	}
	if g.hub != nil {
		return g.terminateWebSocket(w, r, cfg, &scope, repl)
	}
	if q, ok := contract.RequestFrom(r.Context()); ok {
		cfg.Charger = q.Charger()
		if wt := q.Watcher(); wt != nil {
			cfg.Watch = wt.WatchCredential()
			defer cfg.Watch.Stop() // the upgrade may fail before the filter owns it
		}
	}
	g.metrics.allowed.Inc()
	return next.ServeHTTP(wsproxy.WrapResponseWriter(w, r, cfg), r)
}

// subscribeChecker checks one subscribe message's payload as a POST body,
// for the caller read when the socket was opened.
type subscribeChecker struct {
	g     *Guard
	scope requestScope
}

func (s *subscribeChecker) CheckSubscribe(ctx context.Context, payload []byte) (forward, errs []byte) {
	var (
		rec refusalRecorder
		adm admitted
	)
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
		return nil, errs
	}
	endGuardSpan(span, &adm, outcomeAllowed)
	s.g.metrics.allowed.Inc()
	return forward, nil
}

// serveEventStream forwards an admitted graphql-sse request, bounded per key,
// charged to the key's cost budget and cut when the caller's credential
// stops being valid.
func (g *Guard) serveEventStream(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, adm *admitted) error {
	if adm.op.Kind == ast.Subscription && adm.keyID != "" {
		slot := g.slots.forKey(adm.keyID)
		if !slot.Acquire() {
			writeJSON(w, http.StatusOK, document.ErrorBody([]document.Error{{Message: msgTooManySubscriptions, Code: codeSubscriptionLimit}}))
			g.metrics.requests.WithLabelValues(outcomeSubscriptionCap).Inc()
			return nil
		}
		defer slot.Release()
	}
	q, _ := contract.RequestFrom(r.Context())
	if q != nil && q.CostBudget() != nil {
		if outcome := g.chargeCost(r.Context(), w, q.CostBudget(), adm.op, adm.co.Cost); outcome != "" {
			g.metrics.requests.WithLabelValues(outcome).Inc()
			return nil
		}
	}
	g.metrics.allowed.Inc()
	if g.hub != nil && adm.op.Kind == ast.Subscription && (r.Method == http.MethodPost || r.Method == http.MethodGet) {
		return g.terminateEventStream(w, r, q, adm)
	}
	if q == nil || q.Watcher() == nil {
		return next.ServeHTTP(w, r)
	}
	wt := q.Watcher()
	watch := wt.WatchCredential()
	defer watch.Stop()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-watch.Done():
			if reason := watch.Reason(); reason != "" {
				g.logger.Info("event stream ended: credential no longer valid", zap.String("reason", reason))
				cancel()
			}
		case <-ctx.Done():
		}
	}()
	return next.ServeHTTP(w, r.WithContext(ctx))
}
