package library

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// Options configure the engine's HTTP handler. The zero value serves without
// checking X-Civic-Identity and records nothing.
type Options struct {
	// IdentitySecret, when set (>= 32 bytes), makes every request, the
	// WebSocket upgrade included, carry a valid X-Civic-Identity signed with
	// it, as a backend behind civicgate would insist on (identity.go).
	IdentitySecret []byte
	// KeepAlive is the graphql-transport-ws ping interval (default 10 s).
	KeepAlive time.Duration
	// InitTimeout is how long a WebSocket may wait before connection_init
	// (default 10 s).
	InitTimeout time.Duration
	// OnInit, when set, sees every WebSocket connection_init payload.
	OnInit func(ctx context.Context, payload transport.InitPayload)
	// OnOperation, when set, sees every operation as the engine received it,
	// on every transport, before it runs.
	OnOperation func(ctx context.Context, op *graphql.OperationContext)
}

// NewHandler returns the engine: gqlgen's executor over the catalog with the
// GET, POST, multipart/mixed (@defer), graphql-sse and graphql-transport-ws
// transports. Automatic persisted queries are deliberately not enabled: the
// gateway in front resolves them and always sends the full document.
func NewHandler(catalog *Catalog, events *LoanEvents, o Options) http.Handler {
	if o.KeepAlive == 0 {
		o.KeepAlive = 10 * time.Second
	}
	if o.InitTimeout == 0 {
		o.InitTimeout = 10 * time.Second
	}
	srv := handler.New(NewExecutableSchema(Config{Resolvers: &Resolver{Catalog: catalog, Events: events}}))
	srv.AddTransport(transport.Websocket{
		KeepAlivePingInterval: o.KeepAlive,
		InitTimeout:           o.InitTimeout,
		InitFunc:              initFunc(o),
	})
	// The first transport that supports a request serves it: the streaming
	// ones (chosen by Accept) before plain POST.
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.SSE{})
	srv.AddTransport(transport.MultipartMixed{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.Use(extension.Introspection{})
	if o.OnOperation != nil {
		srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
			o.OnOperation(ctx, graphql.GetOperationContext(ctx))
			return next(ctx)
		})
	}
	if o.IdentitySecret != nil {
		return requireIdentity(o.IdentitySecret, srv)
	}
	return srv
}

// errNoIdentity refuses a connection_init on a socket whose upgrade carried
// no verified identity.
var errNoIdentity = errors.New("no verified X-Civic-Identity")

// initFunc accepts connection_init as a real server would: it is where a
// server authenticates a socket. Behind civicgate the gateway has done that
// and the upgrade carried X-Civic-Identity (checked by requireIdentity); the
// payload never holds a credential the engine needs.
func initFunc(o Options) transport.WebsocketInitFunc {
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		if o.OnInit != nil {
			o.OnInit(ctx, payload)
		}
		if o.IdentitySecret != nil && CallerOf(ctx) == nil {
			return ctx, nil, errNoIdentity
		}
		return ctx, &payload, nil
	}
}
