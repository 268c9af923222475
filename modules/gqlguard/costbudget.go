package gqlguard

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// The key's cost budget (docs/design.md D27). civic_rate_limit attaches a
// contract.CostBudget to a request it admits on a route with a cost budget;
// the guard spends on it the cost it publishes as {graphql.cost}, once the
// document has passed every other check and is about to be forwarded: a
// POST or GET in check, a graphql-sse request in serveEventStream (after its
// subscription slot), each WebSocket subscribe in CheckSubscribe (after the
// filter's own bounds and Charger). A document resolved by hash (APQ, a
// trusted document) spends once resolved, like any other; a refused document
// spends nothing. Without a budget in the context nothing here runs.

const (
	// outcomeRateLimited: the budget has no room for the cost now (429 /
	// an `error` message with RATE_LIMITED); the label wsproxy counts its
	// Charger refusals with.
	outcomeRateLimited = "rate_limited"
	// outcomeOverBudget: the cost alone exceeds the whole budget.
	outcomeOverBudget = "over_cost_budget"
)

// spendCost spends cost on budget; h is the HTTP response header (nil on a
// WebSocket). It returns "" when the points were taken, else the refusal's
// outcome and the decision.
func (g *Guard) spendCost(ctx context.Context, budget contract.CostBudget, cost int64, h http.Header) (string, contract.CostDecision) {
	d, err := budget.Spend(ctx, cost, h)
	switch {
	case err != nil:
		g.logger.Error("spending the cost budget failed", zap.Error(err))
		return outcomeInternal, d
	case d.Allowed:
		return "", d
	case d.OverBudget:
		return outcomeOverBudget, d
	}
	return outcomeRateLimited, d
}

// chargeCost spends an HTTP request's cost on budget (nil: no budget, nothing
// to do). Refusals: 429 {"error":"Rate limit exceeded"} with Retry-After
// (the budget set RateLimit), the max_cost refusal's form for a cost over
// the whole budget, 500 when the budget's store failed. It returns the
// outcome, or "" to go on.
func (g *Guard) chargeCost(ctx context.Context, w http.ResponseWriter, budget contract.CostBudget, op *document.Operation, cost int64) string {
	if budget == nil {
		return ""
	}
	outcome, d := g.spendCost(ctx, budget, cost, w.Header())
	switch outcome {
	case outcomeInternal:
		writeJSON(w, http.StatusInternalServerError, contract.BodyInternal)
	case outcomeOverBudget:
		writeJSON(w, http.StatusOK, overBudgetBody(op, cost, d.Budget))
	case outcomeRateLimited:
		w.Header()["Retry-After"] = []string{strconv.FormatInt(retryAfterSeconds(d.RetryAfter), 10)}
		writeJSON(w, http.StatusTooManyRequests, contract.BodyRateLimited)
	}
	return outcome
}

// chargeSubscribe spends a WebSocket subscribe's cost on budget (nil: no
// budget). errs is the `error` message payload of a refusal, as the
// filter's Charger refusals write it (RATE_LIMITED with retryAfter,
// INTERNAL_SERVER_ERROR) or as the max_cost refusal converts.
func (g *Guard) chargeSubscribe(ctx context.Context, budget contract.CostBudget, op *document.Operation, cost int64) (outcome string, errs []byte) {
	if budget == nil {
		return "", nil
	}
	outcome, d := g.spendCost(ctx, budget, cost, nil)
	switch outcome {
	case outcomeInternal:
		errs = errorList(contract.MsgInternal, "INTERNAL_SERVER_ERROR")
	case outcomeOverBudget:
		_, errs = refusalErrors(http.StatusOK, overBudgetBody(op, cost, d.Budget), "")
	case outcomeRateLimited:
		errs = rateLimitedErrors(retryAfterSeconds(d.RetryAfter))
	}
	return outcome, errs
}

// overBudgetBody is the refusal of a document whose cost alone exceeds the
// whole budget, in the form of the max_cost refusal: "Query cost N exceeds
// the cost budget of Q points per <window>", the window named as
// contract.WindowName names it (second, minute, hour, day, or e.g. 90s).
func overBudgetBody(op *document.Operation, cost int64, budget contract.Rate) []byte {
	return document.ErrorBody([]document.Error{{
		Message: fmt.Sprintf("Query cost %s exceeds the cost budget of %d points per %s",
			formatCount(cost), budget.Quota, contract.WindowName(budget)),
		Locations: document.LocationsOf(op.Pos),
		Code:      codeTooCostly,
	}})
}

// rateLimitedErrors is the `error` payload of a subscribe over the limit,
// byte for byte what wsproxy sends for its Charger's refusals.
func rateLimitedErrors(retryAfterSeconds int64) []byte {
	b := []byte(`[{"message":"Rate limit exceeded","extensions":{"code":"RATE_LIMITED","retryAfter":`)
	b = strconv.AppendInt(b, retryAfterSeconds, 10)
	return append(b, `}}]`...)
}

// retryAfterSeconds is a wait in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}
