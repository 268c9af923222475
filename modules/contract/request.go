package contract

// The request value: what civicgate's handlers know about one HTTP request
// beyond net/http, in one typed value carried by the request's context
// (docs/design.md D45). civic_auth attaches it (AttachRequest) and fills
// the caller's identity and credential; each later handler fills the slot it
// owns and reads the others through the accessors below:
//
//	slot          written by          read by
//	Caller        civic_auth          civic_mcp, anything that needs the identity typed
//	Bearer        civic_auth          graphql_guard (documents carrying the token are refused)
//	Watcher       civic_auth          graphql_guard, civic_mcp (long-lived exchanges, D22)
//	Identity      civic_auth          graphql_guard (a fresh X-Civic-Identity for a terminated subscription's upstream reconnect)
//	Charger       civic_rate_limit    graphql_guard (each subscribe of a WebSocket)
//	Recorder      civic_rate_limit    graphql_guard (each subscribe of a WebSocket it admits, D76)
//	CostBudget    civic_rate_limit    graphql_guard (the document's cost, D27)
//	GraphQL       graphql_guard       graphql_cache (the request as the guard decoded it, D40), civic_rate_limit (usage per operation, D70)
//	Transport     civic_mcp           civic_rate_limit's usage accounting (a tool call's request)
//
// A slot is written by its owner before the owner calls the next handler and
// never after, so readers (which run inside that call, or in goroutines it
// starts) need no lock. When two handlers of one route own the same slot
// (two civic_rate_limit handlers with cost budgets), the later one — the
// one closer to the readers — wins, as a nested context value would.
//
// Placeholders ({civic.*}, {graphql.*}) remain the projection that
// Caddyfiles read; the request value is what the modules exchange.

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Request is one request's civicgate state. The zero value is an
// anonymous request with every slot empty.
type Request struct {
	caller     *Caller
	bearer     string
	watcher    Watcher
	identity   IdentitySource
	charger    Charger
	recorder   OperationRecorder
	costBudget CostBudget
	graphQL    GraphQLRequest
	hasGraphQL bool
	failed     bool
	transport  string
}

// TransportMCP is the transport of a request civic_mcp made for a tool call
// (Request.SetTransport): usage accounting counts it apart (docs/design.md D45).
const TransportMCP = "mcp"

// requestCtx carries a Request in the same allocation as the context node
// (context.WithValue would allocate both, and box the key).
type requestCtx struct {
	context.Context
	req Request
}

type requestKey struct{}

func (c *requestCtx) Value(key any) any {
	if _, ok := key.(requestKey); ok {
		return &c.req
	}
	return c.Context.Value(key)
}

// String never shows the bearer token.
func (c *requestCtx) String() string { return "contract.Request" }

// AttachRequest returns r carrying a Request, and that Request: the one r
// already carries when a handler before attached it (then r itself is
// returned, and nothing is allocated), else a new one on a shallow copy of
// r (one allocation for the value and its context node, one for the copy).
func AttachRequest(r *http.Request) (*http.Request, *Request) {
	if q, ok := RequestFrom(r.Context()); ok {
		return r, q
	}
	c := &requestCtx{Context: r.Context()}
	return r.WithContext(c), &c.req
}

// RequestFrom returns the Request attached to ctx (AttachRequest), or false
// when no handler attached one.
func RequestFrom(ctx context.Context) (*Request, bool) {
	q, ok := ctx.Value(requestKey{}).(*Request)
	return q, ok
}

// Derive returns a new Request for a request made on behalf of q's caller
// (civic_mcp's GraphQL request for a tool call): the caller, bearer,
// watcher and identity source are q's, and the slots later handlers fill are empty.
func (q *Request) Derive() Request {
	return Request{caller: q.caller, bearer: q.bearer, watcher: q.watcher, identity: q.identity}
}

// WithRequest returns a copy of ctx that carries q (a Derive'd value).
func WithRequest(ctx context.Context, q Request) context.Context {
	return &requestCtx{Context: ctx, req: q}
}

// SetCredential records who the request was authenticated as: the caller
// (shared and read-only: civic_auth hands out the one it cached for the
// credential), the bearer token it presented, and what follows that
// credential for a long-lived exchange (nil: nothing to watch).
func (q *Request) SetCredential(caller *Caller, bearer string, w Watcher) {
	q.caller, q.bearer, q.watcher = caller, bearer, w
}

// IdentitySource signs a fresh identity assertion (X-Civic-Identity) for a
// request's caller after the request: the assertion the request carries
// lives at most IdentityMaxTTL, and a long-lived exchange that opens an
// upstream connection later (graphql_guard's reconnect of a terminated
// subscription's upstream socket) needs a valid one.
type IdentitySource interface {
	// FreshIdentity returns an assertion valid from now for at least half
	// the signer's lifetime.
	FreshIdentity(now time.Time) (string, error)
}

// SetIdentitySource records what signs a fresh assertion for the caller.
func (q *Request) SetIdentitySource(s IdentitySource) { q.identity = s }

// IdentitySource signs a fresh assertion for the caller; nil when no
// authenticating handler set one.
func (q *Request) IdentitySource() IdentitySource { return q.identity }

// Caller is the authenticated caller (read-only), or false when no
// authenticating handler admitted the request.
func (q *Request) Caller() (*Caller, bool) { return q.caller, q.caller != nil }

// Bearer is the token the caller presented, "" if none was recorded.
func (q *Request) Bearer() string { return q.bearer }

// Watcher follows the caller's credential, or nil.
func (q *Request) Watcher() Watcher { return q.watcher }

// SetCharger sets the Charger of a long-lived exchange's further operations.
func (q *Request) SetCharger(c Charger) { q.charger = c }

// Charger is the Charger set by SetCharger, or nil.
func (q *Request) Charger() Charger { return q.charger }

// SetOperationRecorder sets what counts a long-lived exchange's further
// admitted operations (D76).
func (q *Request) SetOperationRecorder(r OperationRecorder) { q.recorder = r }

// OperationRecorder is the recorder set by SetOperationRecorder, or nil.
func (q *Request) OperationRecorder() OperationRecorder { return q.recorder }

// SetOperationFailed marks the request's operation as an error whatever its
// status: an event stream the upstream ended with an error after a 200
// (docs/design.md D83).
func (q *Request) SetOperationFailed() { q.failed = true }

// OperationFailed reports whether SetOperationFailed was called.
func (q *Request) OperationFailed() bool { return q.failed }

// SetCostBudget sets the caller's cost budget for this request.
func (q *Request) SetCostBudget(b CostBudget) { q.costBudget = b }

// CostBudget is the budget set by SetCostBudget, or nil.
func (q *Request) CostBudget() CostBudget { return q.costBudget }

// SetGraphQL records the GraphQL request as graphql_guard decoded it.
func (q *Request) SetGraphQL(g GraphQLRequest) { q.graphQL, q.hasGraphQL = g, true }

// GraphQL returns the request graphql_guard decoded, or false when no guard
// decoded this request (then nothing about its GraphQL members is known: a
// reader must not guess them from the raw request).
func (q *Request) GraphQL() (*GraphQLRequest, bool) {
	if !q.hasGraphQL {
		return nil, false
	}
	return &q.graphQL, true
}

// SetTransport records that the request was made for another protocol's
// client (TransportMCP), by the handler that made it.
func (q *Request) SetTransport(t string) { q.transport = t }

// Transport is the transport SetTransport recorded, "" for a plain HTTP
// request.
func (q *Request) Transport() string { return q.transport }

// BearerFromRequest returns the token civic_auth recorded for r, or else the
// token of a well-formed "Authorization: Bearer <token>" header (a handler
// used without civic_auth in front of it).
func BearerFromRequest(r *http.Request) (string, bool) {
	if q, ok := RequestFrom(r.Context()); ok && q.bearer != "" {
		return q.bearer, true
	}
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		tok := strings.TrimSpace(h[len(prefix):])
		return tok, tok != ""
	}
	return "", false
}
