package ratelimit

import (
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// exchange is what an admitted request carries beyond the handler, in one
// allocation, only when it needs one: the response status for usage
// counting (its ResponseWriter wraps the client's), the cost budget, and the
// key's identity for both.
type exchange struct {
	caddyhttp.ResponseWriterWrapper
	status int
	budget costBudget
	keyID  string
	org    string
}

// WriteHeader records the final status (1xx other than 101 are interim).
func (e *exchange) WriteHeader(status int) {
	if e.status == 0 && (status >= 200 || status == http.StatusSwitchingProtocols) {
		e.status = status
	}
	e.ResponseWriterWrapper.WriteHeader(status)
}

// Write without WriteHeader means 200.
func (e *exchange) Write(p []byte) (int, error) {
	if e.status == 0 {
		e.status = http.StatusOK
	}
	return e.ResponseWriterWrapper.Write(p)
}

// serveAdmitted calls next for an admitted request (d nil: admitted with the
// store down in open mode): with a Charger on a WebSocket upgrade, the cost
// budget in the context and usage counted around it when configured.
func (h *Handler) serveAdmitted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, repl *caddy.Replacer,
	hp *handlerPolicy, storeKey, key string, d *decision) error {
	u := h.limiter.usage
	if u == nil && hp.cost == nil {
		return next.ServeHTTP(w, h.withCharger(r, hp.req, storeKey, key, "", ""))
	}
	x := &exchange{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	if u != nil {
		x.keyID, x.org = identity(repl)
	}
	ctx := r.Context()
	if hp.cost != nil {
		x.budget = costBudget{limiter: h.limiter, set: hp.cost, storeKey: hp.cost.prefix + key, key: key, req: hp.req}
		if d != nil {
			x.budget.reqDecision = *d
		}
		ctx = contract.WithCostBudget(ctx, &x.budget)
	}
	r = h.withCharger(r.WithContext(ctx), hp.req, storeKey, key, x.keyID, x.org)
	if u == nil || x.keyID == "" {
		return next.ServeHTTP(w, r)
	}
	err := next.ServeHTTP(x, r)
	delta := usage.Delta{Admitted: 1, Cost: x.budget.spent.Load()}
	if hp.cost == nil {
		delta.Cost = costOf(repl)
	}
	switch {
	case x.budget.refused.Load():
		delta.Admitted, delta.Refused = 0, 1
	case x.status >= 500 || (err != nil && x.status == 0):
		delta.ServerErrors = 1
	case x.status >= 400:
		delta.ClientErrors = 1
	}
	u.add(x.keyID, x.org, h.limiter.clock(), delta)
	return err
}

// countRefused counts a request the rate limit refused (429).
func (h *Handler) countRefused(repl *caddy.Replacer) {
	if u := h.limiter.usage; u != nil {
		if keyID, org := identity(repl); keyID != "" {
			u.add(keyID, org, h.limiter.clock(), usage.Delta{Refused: 1})
		}
	}
}

// identity is the key id and organization civic_auth published ("" when
// the request was not authenticated by civic_auth: not counted).
func identity(repl *caddy.Replacer) (keyID, org string) {
	keyID = expand(repl, "{"+contract.CivicKeyID+"}", contract.CivicKeyID)
	org = expand(repl, "{"+contract.CivicOrg+"}", contract.CivicOrg)
	return keyID, org
}

// costOf is {graphql.cost} as graphql_guard published it for the document
// it forwarded (0 if none).
func costOf(repl *caddy.Replacer) int64 {
	v, ok := repl.Get(contract.GraphQLCost)
	if !ok {
		return 0
	}
	switch c := v.(type) {
	case int64:
		return c
	case int:
		return int64(c)
	case string:
		n, _ := strconv.ParseInt(c, 10, 64)
		return n
	}
	return 0
}
