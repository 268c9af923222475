package gqlguard

import (
	"context"
	"mime"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/view"
)

// How an operation arrives and who sends it: the transport decides which
// operation types may use it (GraphQL over HTTP: no mutation over GET;
// subscriptions only over a WebSocket or an event stream).

type transport uint8

const (
	viaPOST        transport = iota // POST, application/json answer
	viaGET                          // GET with the members in the URL query
	viaEventStream                  // graphql-sse: Accept: text/event-stream
	viaMultipart                    // Accept: multipart/mixed (incremental delivery, multipart subscriptions)
	viaWebSocket                    // a graphql-transport-ws subscribe message
)

// requestScope is what the checks need of one request beyond its GraphQL
// members: its context (the APQ store and the cost budget are called with
// it), its transport, and its sender: owned families (the entitlements
// expression), and as civic_auth and civic_rate_limit recorded them in the
// request value (contract.Request) tier, key, bearer token, cost budget. It
// is read once per request; a WebSocket reads it once when the socket
// opens and each subscribe copies it with the message's context.
type requestScope struct {
	ctx        context.Context
	owned      string // families owned, comma-separated
	checkOwned bool   // entitlements apply
	tier       string
	keyID      string
	token      string
	hasToken   bool
	via        transport
	get        bool                // the request is a GET
	budget     contract.CostBudget // the key's cost budget; nil: none (costbudget.go)
	view       *view.Compiled      // the caller's schema view; nil: the whole schema (schemaview.go)
}

// scopeOf reads the request's scope: once per request, once per WebSocket.
func (g *Guard) scopeOf(r *http.Request, repl *caddy.Replacer) requestScope {
	scope := requestScope{ctx: r.Context(), via: transportOf(r), get: r.Method == http.MethodGet}
	scope.owned, scope.checkOwned = g.ownedFamilies(repl)
	scope.view = g.viewOf(scope.owned, scope.checkOwned)
	scope.token, scope.hasToken = contract.BearerFromRequest(r)
	if q, ok := contract.RequestFrom(r.Context()); ok {
		scope.budget = q.CostBudget()
		if caller, ok := q.Caller(); ok {
			scope.tier, scope.keyID = caller.Tier, caller.KeyID
		}
	}
	return scope
}

// transportOf tells the transport from the method and the Accept header.
func transportOf(r *http.Request) transport {
	accept := r.Header["Accept"]
	for _, a := range accept {
		if strings.Contains(a, "text/event-stream") {
			return viaEventStream
		}
		if strings.Contains(a, "multipart/mixed") {
			return viaMultipart
		}
	}
	if r.Method == http.MethodGet {
		return viaGET
	}
	return viaPOST
}

const (
	msgMutationOverGET        = "Mutations are not allowed over GET; use POST"
	msgSubscriptionTransport  = "Subscriptions need a WebSocket (graphql-transport-ws) or an event stream (Accept: text/event-stream)"
	msgTrustedDocumentsOnly   = "Only trusted documents are allowed"
	codeTrustedDocumentNeeded = "TRUSTED_DOCUMENT_REQUIRED"
)

// checkTransport refuses a mutation over GET (405, GraphQL over HTTP) and a
// subscription over a transport that cannot carry one.
func (g *Guard) checkTransport(w http.ResponseWriter, scope *requestScope, op *document.Operation) string {
	switch op.Kind {
	case ast.Mutation:
		if scope.get {
			w.Header().Set("Allow", http.MethodPost)
			writeJSON(w, http.StatusMethodNotAllowed, messageBody(msgMutationOverGET))
			return outcomeMethod
		}
	case ast.Subscription:
		if scope.via == viaPOST || scope.via == viaGET {
			writeJSON(w, http.StatusOK, document.ErrorBody([]document.Error{{
				Message: msgSubscriptionTransport, Locations: document.LocationsOf(op.Pos), Code: codeOperationNotAllowed,
			}}))
			return outcomeOperation
		}
	}
	return ""
}

// acceptsGraphQLResponse reports whether the client asked for
// application/graphql-response+json (GraphQL over HTTP): its refusals then
// use that media type and 4xx statuses for request errors.
func acceptsGraphQLResponse(h http.Header) bool {
	for _, a := range h["Accept"] {
		if !strings.Contains(a, "graphql-response+json") {
			continue
		}
		for _, part := range strings.Split(a, ",") {
			media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && media == "application/graphql-response+json" && params["q"] != "0" {
				return true
			}
		}
	}
	return false
}
