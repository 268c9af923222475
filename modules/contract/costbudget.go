package contract

import (
	"context"
	"net/http"
	"time"
)

// CivicCostBudget is the tier's cost budget as written in its tier line
// ("cost 50000/h", ParseRate syntax: points per window), "" if the tier has
// none: civic_rate_limit's cost budget when its `cost` option names it
// (docs/design.md D27).
const CivicCostBudget = "civic.cost_budget"

// CostBudget charges the cost of an admitted GraphQL document to the budget
// of the key that sent it, in cost points per window. civic_rate_limit
// sets one on every request it admits on a route with a cost budget
// (Request.SetCostBudget); graphql_guard spends the cost it computed, once the
// document passed every other check and before the upstream sees it, for a
// POST or GET as for each subscribe of a WebSocket (docs/design.md D27).
type CostBudget interface {
	// Spend takes cost points. h is the response header of the HTTP request
	// being decided (nil on a WebSocket, whose headers are long gone): Spend
	// sets RateLimit there for the policy closest to exhaustion. err: the
	// store failed and on_store_error says refuse.
	Spend(ctx context.Context, cost int64, h http.Header) (CostDecision, error)
}

// CostDecision is the outcome of CostBudget.Spend.
type CostDecision struct {
	// Allowed: the points were taken.
	Allowed bool
	// RetryAfter: refused, the budget will have room for cost again then
	// (> 0 unless OverBudget).
	RetryAfter time.Duration
	// OverBudget: cost alone exceeds the whole budget; it is never admitted.
	OverBudget bool
	// Budget is the whole budget (points per Window), for messages.
	Budget Rate
}
