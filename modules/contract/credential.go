package contract

// The credential hand-off carries the caller's bearer token from the
// authenticating handler to later handlers in the same request, through the
// request context only: never through headers, placeholders or variables,
// which reach logs and upstreams.
//
// civic_auth removes the Authorization header before the request travels on
// and stores the token here (WithBearer); graphql_guard reads it to refuse
// documents that contain the token (docs/api.md "Authentication"). A handler
// used without civic_auth falls back to the Authorization header itself (see
// BearerFromRequest).

import (
	"context"
	"net/http"
	"strings"
)

type bearerKey struct{}

// bearerCtx is context.WithValue(parent, bearerKey{}, token) in one allocation
// (WithValue would also box the token string).
type bearerCtx struct {
	context.Context
	token   string
	watcher Watcher // set by WithBearerWatcher
	// costBudget is set once by AttachCostBudget, before the handlers that
	// read it run (the request's own context: no copy of the request).
	costBudget CostBudget
}

func (c *bearerCtx) Value(key any) any {
	switch key.(type) {
	case bearerKey:
		return c
	case watcherKey:
		if c.watcher != nil {
			return c
		}
	case costBudgetKey:
		if c.costBudget != nil {
			return c.costBudget
		}
	}
	return c.Context.Value(key)
}

func (c *bearerCtx) String() string { return "contract.WithBearer" } // never the token

// WithBearer returns a copy of ctx that carries the bearer token.
func WithBearer(ctx context.Context, token string) context.Context {
	return &bearerCtx{Context: ctx, token: token}
}

// Bearer returns the token stored by WithBearer.
func Bearer(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(bearerKey{}).(*bearerCtx)
	if !ok {
		return "", false
	}
	return c.token, c.token != ""
}

// BearerFromRequest returns the token stored in r's context, or else the
// token of a well-formed "Authorization: Bearer <token>" header.
func BearerFromRequest(r *http.Request) (string, bool) {
	if tok, ok := Bearer(r.Context()); ok {
		return tok, true
	}
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		tok := strings.TrimSpace(h[len(prefix):])
		return tok, tok != ""
	}
	return "", false
}
