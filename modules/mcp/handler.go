package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/mcp/tooldef"
)

// Defaults of the options (docs/mcp.md "Serving the tools").
const (
	defaultMaxSessionsPerKey = 10
	defaultMaxSessions       = 1000
	defaultIdleTimeout       = 10 * time.Minute
	defaultMaxMessage        = 1 << 20
)

// Handler is the civic_mcp HTTP handler.
type Handler struct {
	// Tools is the tool manifest's path (docs/mcp.md "The tool manifest").
	Tools string `json:"tools"`
	// Schema is the GraphQL schema file graphql_guard validates against.
	Schema string `json:"schema"`
	// Families are graphql_guard's family lines: a family name to root
	// field references (Type.field, or a bare name one root type has).
	Families map[string][]string `json:"families,omitempty"`
	// AllowedOrigins are the browser origins let in; a request without an
	// Origin header is always let in (agent hosts send none).
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// MaxSessionsPerKey bounds the sessions one key holds open (default 10).
	MaxSessionsPerKey int `json:"max_sessions_per_key,omitempty"`
	// MaxSessions bounds the sessions this handler holds open (default 1000).
	MaxSessions int `json:"max_sessions,omitempty"`
	// SessionIdleTimeout ends a session no request used for that long
	// (default 10m).
	SessionIdleTimeout caddy.Duration `json:"session_idle_timeout,omitempty"`
	// MaxMessage bounds a POST's body and a tool's GraphQL answer (default
	// 1 MiB).
	MaxMessage int64 `json:"max_message,omitempty"`
	// MessageRate is the per-key rate of the messages other than a
	// tools/call request, one to four rates in contract.ParseRates' syntax
	// (default 600/m; messagerate.go).
	MessageRate string `json:"message_rate,omitempty"`

	logger   *zap.Logger
	tools    *tooldef.ToolSet
	metrics  *metrics
	sessions *sessionTable
	sdk      *mcpsdk.StreamableHTTPHandler
	// stateless serves the 2026-07-28 messages civic_mcp does not answer
	// itself, one server per tier (modern.go).
	stateless *mcpsdk.StreamableHTTPHandler
	tiers     *tierServers
	families  *familySets                 // each caller's families joined once (modern.go)
	listens   *listenTable                // open subscriptions/listen streams (listen.go)
	messages  caddyhttp.MiddlewareHandler // civic_rate_limit at MessageRate
	impl      *mcpsdk.Implementation
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_mcp", New: func() caddy.Module { return new(Handler) }}
}

// Provision loads the schema and the tool manifest (a reload reads them
// again) and prepares the session table; nothing runs until a request.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.Tools == "" || h.Schema == "" {
		return errors.New("civic_mcp: tools and schema are required")
	}
	schema, err := document.LoadSchema(h.Schema)
	if err != nil {
		return fmt.Errorf("civic_mcp: %w", err)
	}
	if h.tools, err = tooldef.LoadFile(h.Tools, tooldef.Config{Schema: schema.AST, Families: h.Families}); err != nil {
		return fmt.Errorf("civic_mcp: %w", err)
	}
	for i, o := range h.AllowedOrigins {
		if h.AllowedOrigins[i], err = checkOrigin(o); err != nil {
			return fmt.Errorf("civic_mcp: allowed_origins: %w", err)
		}
	}
	if h.MaxSessionsPerKey <= 0 {
		h.MaxSessionsPerKey = defaultMaxSessionsPerKey
	}
	if h.MaxSessions <= 0 {
		h.MaxSessions = defaultMaxSessions
	}
	if h.SessionIdleTimeout <= 0 {
		h.SessionIdleTimeout = caddy.Duration(defaultIdleTimeout)
	}
	if h.MaxMessage <= 0 {
		h.MaxMessage = defaultMaxMessage
	}
	if err := h.provisionMessageRate(ctx); err != nil {
		return err
	}
	if h.metrics, err = newMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("civic_mcp: metrics: %w", err)
	}
	h.impl = &mcpsdk.Implementation{Name: "civicgate", Title: "civicgate", Version: buildVersion()}
	h.sessions = newSessionTable(h, h.MaxSessions, h.MaxSessionsPerKey, time.Duration(h.SessionIdleTimeout))
	h.sdk = mcpsdk.NewStreamableHTTPHandler(serverOf, &mcpsdk.StreamableHTTPOptions{
		// The Origin check and the bearer credential replace the SDK's
		// loopback Host check, which would refuse a gateway listening on
		// loopback behind a proxy.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        h.MaxMessage,
		// No SessionTimeout: the session table ends idle sessions itself,
		// so that every end goes through one path (sessions.go).
	})
	h.listens = newListenTable(h.MaxSessions, h.MaxSessionsPerKey)
	h.tiers = &tierServers{m: map[string]*mcpsdk.Server{}}
	h.families = &familySets{m: map[string]string{}}
	h.stateless = mcpsdk.NewStreamableHTTPHandler(statelessServerOf, &mcpsdk.StreamableHTTPOptions{
		Stateless:                    true,
		JSONResponse:                 true, // one answer per POST: no stream to hold
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          h.MaxMessage,
		PropagateRequestCancellation: true,
	})
	return nil
}

// Cleanup ends the sessions of this configuration: its handler is gone,
// and their clients start new ones on the next (the spec's answer to a
// 404 for a session).
func (h *Handler) Cleanup() error {
	if h.sessions != nil {
		h.sessions.endAll(endUnloaded)
	}
	if h.listens != nil {
		h.listens.closeAll()
	}
	return nil
}

// buildVersion is civicgate's module version, as the binary records it.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// challenge is the WWW-Authenticate of a request no civic_auth admitted.
var challenge = []string{`Bearer realm="civicgate"`}

// ServeHTTP answers the MCP request (POST, GET, DELETE); next only ever
// sees the GraphQL requests tool calls make (toolcall.go).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	q, ok := contract.RequestFrom(r.Context())
	var caller *contract.Caller
	if ok {
		caller, ok = q.Caller()
	}
	if !ok {
		w.Header()["Www-Authenticate"] = challenge
		contract.WriteJSON(w, http.StatusUnauthorized, contract.BodyMissingBearer)
		return nil
	}
	if origin, sent := r.Header["Origin"]; sent && !h.originAllowed(origin) {
		h.metrics.refusals.WithLabelValues(refusedOrigin).Inc()
		contract.WriteJSON(w, http.StatusForbidden, bodyOriginRefused)
		return nil
	}
	// civic_auth removed every client-sent X-Civic-* header; this one is
	// the module's own (toolcall.go), so it is removed again here whatever
	// handler ran before.
	delete(r.Header, callHeader)
	if r.Method != http.MethodPost && r.Header.Get(versionHeader) == versionModern {
		// 2026-07-28 has neither the GET stream nor sessions to DELETE.
		w.Header()["Allow"] = allowedModern
		contract.WriteJSON(w, http.StatusMethodNotAllowed, contract.BodyMethodNotAllowed)
		return nil
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r, next, q, caller)
	case http.MethodGet:
		h.serveGET(w, r, caller)
	case http.MethodDelete:
		h.serveDELETE(w, r, caller)
	default:
		w.Header()["Allow"] = allowed
		contract.WriteJSON(w, http.StatusMethodNotAllowed, contract.BodyMethodNotAllowed)
	}
	return nil
}

var (
	allowed       = []string{"GET, POST, DELETE"}
	allowedModern = []string{"POST"}
)

// bodyOriginRefused answers a browser origin not in allowed_origins.
var bodyOriginRefused = contract.ErrorBody(msgOriginRefused)

const msgOriginRefused = "Origin not allowed"

// originAllowed reports whether the Origin header values are one allowed
// origin.
func (h *Handler) originAllowed(values []string) bool {
	if len(values) != 1 {
		return false
	}
	for _, a := range h.AllowedOrigins {
		if strings.EqualFold(values[0], a) {
			return true
		}
	}
	return false
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
