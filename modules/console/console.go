// Package console is the organization console (`civic_console`): a Caddy
// HTTP handler serving, on its own site, the pages where an organization's
// members see their keys, usage and webhooks and manage them — sign-in by
// OpenID Connect or a one-time link from `civicgate console link`, sessions
// kept server-side in PostgreSQL, every change in the audit log. It changes
// keys through the key store (modules/auth/keystore) and webhook endpoints
// through the webhooks service (modules/webhooks), the code paths the CLI and
// the API use. docs/design.md D34 and docs/operations.md "The organization
// console" describe it; the API routes never read its cookies.
package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/webhooks"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Defaults of the handler's options.
const (
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultSessionLifetime = 12 * time.Hour
	// pageSize is the rows per page of the keys, deliveries and audit lists.
	pageSize = 50
	// dbTimeout bounds the database work of one request.
	dbTimeout = 5 * time.Second
)

// Handler is the civic_console HTTP handler (terminal: it answers every
// request of its site).
type Handler struct {
	// Database is the PostgreSQL DSN of the key store (use {env.DATABASE_URL}).
	Database string `json:"database"`
	// Tiers are the tier lines civic_auth reads (import tiers.caddy): the
	// console shows their quotas and offers their names to operators.
	Tiers map[string]TierConfig `json:"tiers,omitempty"`
	// OIDC, when set, offers sign-in with an OpenID Connect provider.
	OIDC *OIDCConfig `json:"oidc,omitempty"`
	// IdleTimeout ends a session this long after its last request (default 30m).
	IdleTimeout caddy.Duration `json:"idle_timeout,omitempty"`
	// SessionLifetime ends a session this long after sign-in (default 12h).
	SessionLifetime caddy.Duration `json:"session_lifetime,omitempty"`
	// Signup, when set and not closed, offers self-serve sign-up (signup.go).
	Signup *SignupConfig `json:"signup,omitempty"`
	// MaxEndpoints bounds an organization's webhook endpoints: one limit
	// shared with the civic_webhooks handler over the same app (set it on
	// either; two different values are refused; default 20).
	MaxEndpoints int `json:"max_endpoints,omitempty"`

	pool     *pgxpool.Pool
	hooks    *webhooks.Service // nil when civic_webhooks is not configured
	hooksApp *webhooks.App
	tiers    map[string]tier
	pages    *template.Template
	serve    http.Handler
	oidc     *oidcClient
	signup   *signup // nil: sign-up closed
	logger   *zap.Logger
	timeout  struct{ idle, lifetime time.Duration }
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_console", New: func() caddy.Module { return new(Handler) }}
}

// Provision reads the configuration; it opens no connection (the pool
// connects on first use) and fetches no OIDC discovery document (that
// happens at the first sign-in).
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	repl := caddy.NewReplacer()
	dsn := repl.ReplaceAll(h.Database, "")
	if dsn == "" {
		return fmt.Errorf("civic_console: database is required (e.g. database {env.DATABASE_URL})")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return errors.New("civic_console: cannot parse the database DSN") // it may hold a password: not echoed
	}
	cfg.MaxConns = 8
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > dbTimeout {
		cfg.ConnConfig.ConnectTimeout = dbTimeout
	}
	if h.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return errors.New("civic_console: cannot open the database pool")
	}
	// unset or below zero (the JSON config allows one): the default
	h.timeout.idle = cmp.Or(max(time.Duration(h.IdleTimeout), 0), DefaultIdleTimeout)
	h.timeout.lifetime = cmp.Or(max(time.Duration(h.SessionLifetime), 0), DefaultSessionLifetime)
	if h.tiers, err = parseTiers(h.Tiers); err != nil {
		return fmt.Errorf("civic_console: %w", err)
	}
	if app, err := ctx.AppIfConfigured("civic_webhooks"); err == nil {
		h.hooksApp = app.(*webhooks.App)
		if h.hooks, err = h.hooksApp.Service(h.MaxEndpoints, 0); err != nil {
			return fmt.Errorf("civic_console: %w", err)
		}
	}
	if h.OIDC != nil {
		if h.oidc, err = newOIDCClient(*h.OIDC, repl); err != nil {
			return fmt.Errorf("civic_console: oidc: %w", err)
		}
	}
	if err := h.provisionSignup(ctx, repl); err != nil {
		return fmt.Errorf("civic_console: %w", err)
	}
	if h.pages, err = parsePages(); err != nil {
		return fmt.Errorf("civic_console: %w", err)
	}
	h.serve = h.routes()
	return nil
}

// Cleanup closes the database pool and releases the webhooks service.
func (h *Handler) Cleanup() error {
	if h.hooks != nil {
		h.hooks.Close()
	}
	if h.pool != nil {
		h.pool.Close()
	}
	return nil
}

// ServeHTTP answers every request of the console's site.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	hdr := w.Header()
	// No inline script or style anywhere; forms post only to the console.
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer") // a sign-in link's token never leaves in a Referer
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	// PostgreSQL text holds neither NUL nor invalid UTF-8: an id in the path
	// or a query value with either names nothing (and would fail its query).
	if !storable(r.URL.Path) {
		h.notFound(w, r)
		return nil
	}
	for _, vs := range r.URL.Query() {
		for _, v := range vs {
			if !storable(v) {
				h.status(w, r, http.StatusBadRequest, "This address is not valid", "It holds characters no page of the console uses.")
				return nil
			}
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), dbTimeout)
	defer cancel()
	h.serve.ServeHTTP(w, r.WithContext(ctx))
	return nil
}

// storable reports whether s can be stored in or compared with a
// PostgreSQL text column: valid UTF-8 without NUL.
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// clientAddr is the request's client address as Caddy determined it
// (trusted proxies honoured), for the audit log.
func clientAddr(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	return r.RemoteAddr
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
