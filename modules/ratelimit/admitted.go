package ratelimit

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// admission is what an admitted request carries beyond the handler, in one
// allocation, only when it needs one: the response status for usage
// counting (its ResponseWriter wraps the client's), the cost budget, and the
// key's identity for both.
type admission struct {
	caddyhttp.ResponseWriterWrapper
	status int
	keyID  string
	budget *costBudget // the cost budget's, else nil
	vals   [2]string   // the handler's RateLimit-Policy and RateLimit values
	// stream: the request asks for a stream (graphql-sse, multipart);
	// headerAt is then when its status was written, the stream's start
	// (docs/design.md D76).
	stream   bool
	headerAt time.Time
}

// budgetAdmission is an admission and its cost budget in one allocation, for a
// request with a cost budget (the budget is larger than the rest: a request
// without one does not carry it).
type budgetAdmission struct {
	admission
	costs costBudget
}

// newAdmission allocates what ServeHTTP hands on for a request of hp.
func newAdmission(hp *handlerPolicy) *admission {
	if hp.cost == nil {
		return new(admission)
	}
	be := new(budgetAdmission)
	be.budget = &be.costs
	return &be.admission
}

// WriteHeader records the final status (1xx other than 101 are interim).
func (e *admission) WriteHeader(status int) {
	if e.status == 0 && (status >= 200 || status == http.StatusSwitchingProtocols) {
		e.status = status
		if e.stream {
			e.headerAt = time.Now()
		}
	}
	e.ResponseWriterWrapper.WriteHeader(status)
}

// Write without WriteHeader means 200.
func (e *admission) Write(p []byte) (int, error) {
	if e.status == 0 {
		e.status = http.StatusOK
		if e.stream {
			e.headerAt = time.Now()
		}
	}
	return e.ResponseWriterWrapper.Write(p)
}

// serveAdmitted calls next for an admitted request (d nil: admitted with the
// store down in open mode): with a Charger on a WebSocket upgrade, the cost
// budget in the request value and usage counted around it when configured. x is
// the admission ServeHTTP allocated with its header values (usage on), or nil.
func (h *Handler) serveAdmitted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, repl *caddy.Replacer,
	hp *handlerPolicy, storeKey, key string, d *decision, x *admission) error {
	u := h.limiter.usage
	if u == nil && hp.cost == nil {
		return next.ServeHTTP(w, h.withCharger(r, hp.req, storeKey, key, "", nil))
	}
	if x == nil {
		x = newAdmission(hp)
	}
	x.ResponseWriter = w
	if u != nil {
		x.keyID = h.keyID(repl, key)
	}
	if hp.cost != nil {
		*x.budget = costBudget{limiter: h.limiter, set: hp.cost, storeKey: hp.cost.prefix + key, key: key, req: hp.req,
			rateLimit: &x.vals[1]}
		if d != nil {
			x.budget.reqDecision = *d
		}
		if u != nil && u.crossings != nil {
			if org := orgTemplate.Expand(repl); org != "" {
				x.budget.crossings, x.budget.orgID = u.crossings, org
				if !h.perOrg || key != org { // counted per key
					x.budget.keyID = x.keyID
				}
			}
		}
		var q *contract.Request
		r, q = contract.AttachRequest(r)
		q.SetCostBudget(x.budget)
	}
	r = h.withCharger(r, hp.req, storeKey, key, x.keyID, repl)
	if u == nil || x.keyID == "" {
		return next.ServeHTTP(w, r)
	}
	var started time.Time
	if u.ops != nil {
		// the request value the guard publishes the operation in (no
		// allocation when civic_auth attached it, as it does)
		r, _ = contract.AttachRequest(r)
		started = time.Now()
	}
	if x.stream = acceptsStream(r.Header); x.stream {
		// reverse_proxy ends a stream whose client left with
		// panic(http.ErrAbortHandler), after the status went out: the
		// stream was served, so it is counted before the panic goes on
		// (docs/design.md D76).
		defer func() {
			if v := recover(); v != nil {
				h.countServed(r, repl, d, x, errStreamPanicked, started)
				panic(v)
			}
		}()
	}
	err := next.ServeHTTP(x, r)
	h.countServed(r, repl, d, x, err, started)
	return err
}

// errStreamPanicked is what countServed is told of a stream whose handler
// panicked: a server error unless its status went out first.
var errStreamPanicked = errors.New("civic_rate_limit: the stream's handler panicked")

// countServed counts an admitted request once next returned err (or
// panicked: errStreamPanicked): in the minute counts, and its operation when
// the guard published one and operations are counted (started is then when
// next was called).
func (h *Handler) countServed(r *http.Request, repl *caddy.Replacer, d *decision, x *admission, err error, started time.Time) {
	u := h.limiter.usage
	delta := usage.Delta{Admitted: 1, MCP: mcpCall(r)}
	if x.budget != nil {
		delta.Cost = x.budget.spent.Load()
	}
	switch {
	case x.budget != nil && x.budget.refused.Load():
		delta.Admitted, delta.Refused = 0, 1
	case x.status >= 500 || (err != nil && x.status == 0):
		delta.ServerErrors = 1
	case x.status >= 400:
		delta.ClientErrors = 1
	}
	var at time.Time
	if d != nil {
		at = time.UnixMicro(d.at)
	} else { // admitted with the store down (open): no decision time
		at = h.limiter.clock()
	}
	u.add(x.keyID, (*replacerOrg)(repl), at, delta)
	if u.ops != nil && delta.Admitted == 1 {
		took := time.Since(started)
		if x.stream && !x.headerAt.IsZero() {
			// a stream's latency is the time to its start, not its life
			took = x.headerAt.Sub(started)
		}
		u.addOperation(r, x.keyID, (*replacerOrg)(repl), at, delta, took)
	}
}

// acceptsStream reports whether the Accept header asks for an answer that
// streams (graphql-sse's text/event-stream, incremental delivery's
// multipart/mixed), as graphql_guard tells the transport.
func acceptsStream(h http.Header) bool {
	for _, a := range h["Accept"] {
		if strings.Contains(a, "text/event-stream") || strings.Contains(a, "multipart/mixed") {
			return true
		}
	}
	return false
}

// countRefused counts a request the rate limit refused (429) at d.at.
func (h *Handler) countRefused(r *http.Request, repl *caddy.Replacer, key string, d *decision) {
	if u := h.limiter.usage; u != nil {
		if keyID := h.keyID(repl, key); keyID != "" {
			u.add(keyID, (*replacerOrg)(repl), time.UnixMicro(d.at), usage.Delta{Refused: 1, MCP: mcpCall(r)})
		}
	}
}

// mcpCall is 1 for a request civic_mcp made for a tool call, else 0.
func mcpCall(r *http.Request) int64 {
	if q, ok := contract.RequestFrom(r.Context()); ok && q.Transport() == contract.TransportMCP {
		return 1
	}
	return 0
}

// keyIDTemplate reads the key id civic_auth publishes.
var keyIDTemplate = caddyopt.ParseTemplate("{" + contract.CivicKeyID + "}")

// keyID is the key id civic_auth published ("" when the request was not
// authenticated by civic_auth: not counted); key is the handler's resolved
// key, the key id itself by default (not under count per_organization,
// where the counting key may be the organization's).
func (h *Handler) keyID(repl *caddy.Replacer, key string) string {
	if h.key.Placeholder() == contract.CivicKeyID && !h.perOrg {
		return key
	}
	return keyIDTemplate.Expand(repl)
}
