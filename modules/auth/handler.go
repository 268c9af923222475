package auth

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler authenticates a request's bearer key with the civic_auth app and,
// on success, publishes {civic.*} placeholders, strips the Authorization and
// client-sent X-Civic-* headers, and asserts the caller upstream in
// X-Civic-Identity.
type Handler struct {
	// RequireFamily refuses (403) keys whose tier lacks this family.
	RequireFamily string `json:"require_family,omitempty"`

	app    *App
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_auth", New: func() caddy.Module { return new(Handler) }}
}

// Provision finds the civic_auth app.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.RequireFamily != "" && !familyRE.MatchString(h.RequireFamily) {
		return fmt.Errorf("civic_auth: bad require_family %q", h.RequireFamily)
	}
	app, err := ctx.AppIfConfigured("civic_auth")
	if err != nil {
		return fmt.Errorf("civic_auth: the civic_auth global option (app) must be configured: %w", err)
	}
	h.app = app.(*App)
	return nil
}

// Refusal bodies, DESIGN.md §3.6 (exact strings).
var (
	bodyMissing     = []byte(`{"error":"Missing bearer token"}`)
	bodyMalformed   = []byte(`{"error":"Malformed authorization header"}`)
	bodyInvalid     = []byte(`{"error":"Invalid API key"}`)
	bodyRevoked     = []byte(`{"error":"API key revoked"}`)
	bodyRotated     = []byte(`{"error":"API key rotated out"}`)
	bodyWrongEnv    = []byte(`{"error":"API key not valid in this environment"}`)
	bodySuspended   = []byte(`{"error":"Organization suspended"}`)
	bodyNotEntitled = []byte(`{"error":"Tier not entitled to this endpoint family"}`)
	bodyInternal    = []byte(`{"error":"Internal Server Error"}`)
	bodyThrottled   = []byte(`{"error":"Rate limit exceeded"}`)
)

var (
	jsonCT    = []string{"application/json"}
	challenge = []string{`Bearer realm="civicgate"`}
)

func (h *Handler) refuse(w http.ResponseWriter, status int, body []byte, outcome string) error {
	h.app.metrics.inc(outcome)
	hdr := w.Header()
	hdr["Content-Type"] = jsonCT
	if status == http.StatusUnauthorized {
		hdr["Www-Authenticate"] = challenge
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil
}

// refuseThrottled answers 429 with Retry-After in whole seconds (≥ 1).
func (h *Handler) refuseThrottled(w http.ResponseWriter, wait time.Duration) error {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	w.Header()["Retry-After"] = []string{strconv.Itoa(secs)}
	return h.refuse(w, http.StatusTooManyRequests, bodyThrottled, outcomeThrottled)
}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// A key in the URL is refused before the header is read and without a
	// lookup; the log names the path (redacted), never the query.
	if where := keyInURL(r.URL); where != "" {
		h.logger.Info("API key sent in the URL; refused", zap.String("in", where), zap.String("path", redactedPath(r.URL)))
		return h.refuse(w, http.StatusBadRequest, bodyKeyInURL, outcomeKeyInURL)
	}
	vals := r.Header["Authorization"]
	var v string
	if len(vals) > 0 {
		v = vals[0]
	}
	if len(vals) > 1 {
		return h.refuse(w, http.StatusUnauthorized, bodyMalformed, outcomeMalformed)
	}
	token, problem := ParseAuthorization(v, len(vals) == 1)
	switch problem {
	case headerMissing:
		return h.refuse(w, http.StatusUnauthorized, bodyMissing, outcomeMissing)
	case headerMalformed:
		return h.refuse(w, http.StatusUnauthorized, bodyMalformed, outcomeMalformed)
	}

	now := time.Now()
	e, wait, err := h.app.resolveFor(r, keystore.HashKey(token), now)
	if err != nil {
		return h.refuse(w, http.StatusInternalServerError, bodyInternal, outcomeError)
	}
	if wait > 0 {
		return h.refuseThrottled(w, wait)
	}
	if !e.found {
		return h.refuse(w, http.StatusUnauthorized, bodyInvalid, outcomeInvalid)
	}
	switch e.rec.Status {
	case keystore.StatusActive:
	case keystore.StatusRevoked:
		return h.refuse(w, http.StatusUnauthorized, bodyRevoked, outcomeRevoked)
	case keystore.StatusRotated:
		return h.refuse(w, http.StatusUnauthorized, bodyRotated, outcomeRotated)
	default:
		h.logger.Error("key has an unknown status", zap.String("key_id", e.rec.KeyID), zap.String("status", e.rec.Status))
		return h.refuse(w, http.StatusUnauthorized, bodyInvalid, outcomeInvalid)
	}
	if e.rec.Env != h.app.Environment {
		return h.refuse(w, http.StatusUnauthorized, bodyWrongEnv, outcomeWrongEnv)
	}
	if e.rec.OrgStatus != keystore.OrgActive {
		return h.refuse(w, http.StatusForbidden, bodySuspended, outcomeSuspended)
	}
	if e.tier == nil {
		h.logger.Error("key has a tier this config does not define; refusing", zap.String("key_id", e.rec.KeyID), zap.String("tier", e.rec.Tier))
		return h.refuse(w, http.StatusForbidden, bodyNotEntitled, outcomeNotEntitled)
	}
	if h.RequireFamily != "" && !e.tier.entitled(h.RequireFamily) {
		return h.refuse(w, http.StatusForbidden, bodyNotEntitled, outcomeNotEntitled)
	}
	assertion, err := h.app.identityFor(e, now)
	if err != nil {
		h.logger.Error("signing the identity assertion failed", zap.String("key_id", e.rec.KeyID), zap.Error(err))
		return h.refuse(w, http.StatusInternalServerError, bodyInternal, outcomeError)
	}

	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set(contract.CivicKeyID, e.keyIDVal)
		repl.Set(contract.CivicOrg, e.orgVal)
		repl.Set(contract.CivicTier, e.tierVal)
		repl.Set(contract.CivicEnv, e.envVal)
		repl.Set(contract.CivicRate, e.tier.rateVal)
		repl.Set(contract.CivicFamilies, e.tier.familiesVal)
	}
	for k := range r.Header {
		if len(k) >= 8 && strings.EqualFold(k[:8], "X-Civic-") {
			delete(r.Header, k)
		}
	}
	delete(r.Header, "Authorization")
	r.Header[contract.IdentityHeader] = assertion.header
	h.app.metrics.inc(outcomeOK)
	return next.ServeHTTP(w, r.WithContext(contract.WithBearer(r.Context(), token)))
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
