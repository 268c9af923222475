package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Defaults of the civic_webhooks handler.
const (
	DefaultPrefix       = "/v1"
	DefaultOrg          = "{" + contract.CivicOrg + "}"
	DefaultEnv          = "{" + contract.CivicEnv + "}"
	DefaultFamilies     = "{" + contract.CivicFamilies + "}"
	DefaultMaxReplay    = 10_000
	DefaultMaxEndpoints = 20
	DefaultLimit        = 25
	MaxLimit            = 100
	maxBody             = 64 << 10
	dbTimeout           = 10 * time.Second
)

// Handler serves the change feed and the webhook-endpoint API (docs/design.md
// D14, D15; docs/api.md "Change feed and webhooks") under Prefix: GET {prefix}/changes and {prefix}/webhook-endpoints….
// It is terminal (never calls next) and needs the caller's organization and
// families, which civic_auth publishes.
type Handler struct {
	// Prefix the API paths live under (default "/v1").
	Prefix string `json:"prefix,omitempty"`
	// Org is the caller's organization id (default "{civic.org}").
	Org string `json:"org,omitempty"`
	// Env is the caller's key environment (default "{civic.env}"): an
	// endpoint's deliveries follow the tiers of its organization's active
	// keys in the environment it was registered from.
	Env string `json:"env,omitempty"`
	// Families are the caller's entitled families, comma-separated (default
	// "{civic.families}").
	Families string `json:"families,omitempty"`
	// MaxReplay bounds the events one replay request schedules (default
	// 10000). Shared by every user of the civic_webhooks app (the console
	// too, docs/design.md D43): set it once.
	MaxReplay int `json:"max_replay,omitempty"`
	// MaxEndpoints bounds the endpoints of one organization (default 20),
	// shared likewise.
	MaxEndpoints int `json:"max_endpoints,omitempty"`

	app    *App
	svc    *Service
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_webhooks", New: func() caddy.Module { return new(Handler) }}
}

// Provision finds the civic_webhooks app.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.Prefix == "" {
		h.Prefix = DefaultPrefix
	}
	h.Prefix = strings.TrimSuffix(h.Prefix, "/")
	if h.Prefix != "" && !strings.HasPrefix(h.Prefix, "/") {
		return fmt.Errorf("civic_webhooks: prefix %q must start with /", h.Prefix)
	}
	if h.Org == "" {
		h.Org = DefaultOrg
	}
	if h.Env == "" {
		h.Env = DefaultEnv
	}
	if h.Families == "" {
		h.Families = DefaultFamilies
	}
	app, err := ctx.AppIfConfigured("civic_webhooks")
	if err != nil {
		return fmt.Errorf("civic_webhooks: the civic_webhooks global option (app) must be configured: %w", err)
	}
	h.app = app.(*App)
	if h.svc, err = h.app.Service(h.MaxEndpoints, h.MaxReplay); err != nil {
		return fmt.Errorf("civic_webhooks: %w", err)
	}
	return nil
}

// Cleanup releases the handler's share of the endpoint limit.
func (h *Handler) Cleanup() error {
	if h.svc != nil {
		h.svc.Close()
	}
	return nil
}

// caller is who is asking, from civic_auth's placeholders; ok is false
// without an organization.
func (h *Handler) caller(r *http.Request) (Caller, bool) {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		return Caller{}, false
	}
	// Env "" when unknown: the endpoint then counts every environment's keys.
	c := Caller{Org: strings.TrimSpace(repl.ReplaceAll(h.Org, "")), Env: strings.TrimSpace(repl.ReplaceAll(h.Env, ""))}
	for _, f := range strings.Split(repl.ReplaceAll(h.Families, ""), ",") {
		if f = strings.TrimSpace(f); f != "" {
			c.Families = append(c.Families, f)
		}
	}
	return c, c.Org != ""
}

// ServeHTTP implements caddyhttp.MiddlewareHandler (terminal).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	rest, ok := strings.CutPrefix(r.URL.Path, h.Prefix)
	if !ok {
		return writeRaw(w, http.StatusNotFound, contract.BodyNotFound)
	}
	c, ok := h.caller(r)
	if !ok {
		h.logger.Error("no organization for the webhooks API: put civic_auth in front of civic_webhooks (or set org)")
		return writeRaw(w, http.StatusInternalServerError, contract.BodyInternal)
	}
	ctx, cancel := context.WithTimeout(r.Context(), dbTimeout)
	defer cancel()
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "/changes":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return notAllowed(w, "GET")
		}
		// The feed checks the family itself too (the endpoint API's rules are
		// the Service's): a route missing require_family changes leaks nothing.
		if !c.entitled(ManageFamily) {
			return writeRaw(w, http.StatusForbidden, contract.BodyNotEntitled)
		}
		return h.changes(ctx, w, r, c)
	case rest == "/webhook-endpoints" || rest == "/webhook-endpoints/":
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			return h.list(ctx, w, r, c)
		case http.MethodPost:
			return h.create(ctx, w, r, c)
		}
		return notAllowed(w, "GET, POST")
	case len(segs) == 2 && segs[0] == "webhook-endpoints" && segs[1] != "":
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			return h.get(ctx, w, r, c, segs[1])
		case http.MethodDelete:
			return h.delete(ctx, w, r, c, segs[1])
		}
		return notAllowed(w, "GET, DELETE")
	case len(segs) == 3 && segs[0] == "webhook-endpoints" && segs[1] != "":
		id := segs[1]
		switch segs[2] {
		case "deliveries":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				return notAllowed(w, "GET")
			}
			return h.deliveries(ctx, w, r, c, id)
		case "rotate-secret", "replay", "test":
			if r.Method != http.MethodPost {
				return notAllowed(w, "POST")
			}
			switch segs[2] {
			case "rotate-secret":
				return h.rotate(ctx, w, r, c, id)
			case "replay":
				return h.replay(ctx, w, r, c, id)
			}
			return h.test(ctx, w, r, c, id)
		}
	}
	return writeRaw(w, http.StatusNotFound, contract.BodyNotFound)
}

// fail answers a Service error: *InputError 400 with its message,
// ErrSuspended and ErrNotEntitled 403 with civic_auth's bodies,
// store.ErrNotFound 404 (another organization's endpoint included: never
// 403), anything else 500 (logged).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) error {
	var in *InputError
	switch {
	case errors.As(err, &in):
		return badRequest(w, in.Message)
	case errors.Is(err, ErrSuspended):
		return writeRaw(w, http.StatusForbidden, contract.BodyOrgSuspended)
	case errors.Is(err, ErrNotEntitled):
		return writeRaw(w, http.StatusForbidden, contract.BodyNotEntitled)
	case errors.Is(err, store.ErrNotFound):
		return writeRaw(w, http.StatusNotFound, contract.BodyNotFound)
	}
	return h.internal(w, r, err)
}

type page struct {
	Items      any     `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
