package auth

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

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

	// refusedFamily is the Civic-Refused-Family value of a require_family
	// refusal, made once (docs/design.md D41).
	refusedFamily []string

	app    *App
	logger *zap.Logger
	// refusals logs refused known keys, sampled (refusalLog) so that a
	// client hammering with a revoked key cannot flood the log.
	refusals *zap.Logger
}

// refusalLog is the sampled logger for refused known keys: per message and
// level, the first 10 lines of every second, then one in 100.
func refusalLog(l *zap.Logger) *zap.Logger {
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, 10, 100)
	}))
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_auth", New: func() caddy.Module { return new(Handler) }}
}

// Provision finds the civic_auth app.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	h.refusals = refusalLog(h.logger)
	if h.RequireFamily != "" && !familyRE.MatchString(h.RequireFamily) {
		return fmt.Errorf("civic_auth: bad require_family %q", h.RequireFamily)
	}
	if h.RequireFamily != "" {
		h.refusedFamily = []string{h.RequireFamily}
	}
	app, err := ctx.AppIfConfigured("civic_auth")
	if err != nil {
		return fmt.Errorf("civic_auth: the civic_auth global option (app) must be configured: %w", err)
	}
	h.app = app.(*App)
	return nil
}

// challenge is the WWW-Authenticate value of a 401 without a jwt block
// (with one, the app's names the resource metadata), shared like the
// refusal's other header values (refusalWriter): read-only.
var challenge = []string{`Bearer realm="civicgate"`}

// refusalWriter writes the refusals with shared header values: no allocation.
var refusalWriter = contract.JSONWriter{SharedValues: true}

// refuse writes one of the exact refusal bodies of docs/api.md "Errors"
// (contract.Body*) without allocating.
func (h *Handler) refuse(w http.ResponseWriter, as *authSpan, status int, body []byte, outcome string) error {
	h.app.metrics.inc(outcome)
	as.end(outcome)
	if status == http.StatusUnauthorized {
		if hdr := w.Header(); hdr["Www-Authenticate"] == nil {
			hdr["Www-Authenticate"] = h.app.challenge
		}
	}
	refusalWriter.Write(w, status, body)
	return nil
}

// refuseKnown is refuse for a key the store knows — revoked, rotated out,
// suspended, of a deleted organization — logged at info with its id and
// organization (never the key or its hash), so an operator can tell which
// client keeps using a key it should not (docs/design.md D8).
func (h *Handler) refuseKnown(w http.ResponseWriter, as *authSpan, status int, body []byte, outcome string, e *resolvedKey) error {
	l := h.refusals
	if l == nil {
		l = h.logger
	}
	l.Info("API key refused", zap.String("key_id", e.rec.KeyID), zap.String("org", e.rec.OrgID), zap.String("reason", outcome))
	return h.refuse(w, as, status, body, outcome)
}

// refuseThrottled answers 429 with Retry-After in whole seconds (≥ 1).
func (h *Handler) refuseThrottled(w http.ResponseWriter, as *authSpan, wait time.Duration) error {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	w.Header()["Retry-After"] = []string{strconv.Itoa(secs)}
	return h.refuse(w, as, http.StatusTooManyRequests, contract.BodyRateLimited, outcomeThrottled)
}

// ServeHTTP implements caddyhttp.MiddlewareHandler. A request whose server
// span records (tracing on, request sampled) gets a civic_auth span
// (tracing.go); any other costs one context lookup.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if server := trace.SpanFromContext(r.Context()); server.IsRecording() {
		return h.serveTraced(w, r, next, server)
	}
	return h.serve(w, r, next, nil)
}

// serve authenticates r; as (nil when not traced) records the outcome.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, as *authSpan) error {
	// A key in the URL is refused before the header is read and without a
	// lookup; the log names the path (redacted), never the query.
	if where := keyInURL(r.URL); where != "" {
		h.logger.Info("API key sent in the URL; refused", zap.String("in", where), zap.String("path", keystore.RedactedPath(r.URL)))
		return h.refuse(w, as, http.StatusBadRequest, contract.BodyKeyInURL, outcomeKeyInURL)
	}
	vals := r.Header["Authorization"]
	var v string
	if len(vals) > 0 {
		v = vals[0]
	}
	if len(vals) > 1 {
		return h.refuse(w, as, http.StatusUnauthorized, contract.BodyMalformedHeader, outcomeMalformed)
	}
	token, problem := parseBearer(v, len(vals) == 1)
	switch problem {
	case headerMissing:
		return h.refuse(w, as, http.StatusUnauthorized, contract.BodyMissingBearer, outcomeMissing)
	case headerMalformed:
		return h.refuse(w, as, http.StatusUnauthorized, contract.BodyMalformedHeader, outcomeMalformed)
	}

	if t := h.app.tokens; t != nil && !strings.HasPrefix(token, apiKeyPrefix) {
		r, ok, err := h.serveToken(w, r, as, t, token)
		if !ok {
			return err
		}
		return next.ServeHTTP(w, r)
	}
	if !keystore.WellFormed(token) { // not a key's shape (with no jwt block, or with the cg_ prefix)
		return h.refuse(w, as, http.StatusUnauthorized, contract.BodyMalformedHeader, outcomeMalformed)
	}

	now := h.app.now()
	e, wait, err := h.app.resolveFor(r, keystore.HashKey(token), now)
	if err != nil {
		return h.refuse(w, as, http.StatusInternalServerError, contract.BodyInternal, outcomeError)
	}
	if wait > 0 {
		return h.refuseThrottled(w, as, wait)
	}
	if !e.found {
		return h.refuse(w, as, http.StatusUnauthorized, contract.BodyInvalidKey, outcomeInvalid)
	}
	switch e.rec.Status {
	case keystore.StatusActive:
	case keystore.StatusRotating: // accepted until the end of its overlap
		if !now.Before(e.rec.RotatesOut) {
			return h.refuseKnown(w, as, http.StatusUnauthorized, contract.BodyKeyRotated, outcomeRotated, e)
		}
	case keystore.StatusRevoked:
		return h.refuseKnown(w, as, http.StatusUnauthorized, contract.BodyKeyRevoked, outcomeRevoked, e)
	case keystore.StatusRotated:
		return h.refuseKnown(w, as, http.StatusUnauthorized, contract.BodyKeyRotated, outcomeRotated, e)
	default:
		h.logger.Error("key has an unknown status", zap.String("key_id", e.rec.KeyID), zap.String("status", e.rec.Status))
		return h.refuse(w, as, http.StatusUnauthorized, contract.BodyInvalidKey, outcomeInvalid)
	}
	// A live key's expiry, from the cached record and the request's time:
	// refused at the instant, however long ago the record was cached, with
	// no store work beyond any other refusal's (docs/design.md D71).
	if e.rec.Expired(now) {
		return h.refuseKnown(w, as, http.StatusUnauthorized, contract.BodyKeyExpired, outcomeExpired, e)
	}
	as.setOrg(e.rec.OrgID)
	if e.rec.Env != h.app.Environment {
		return h.refuse(w, as, http.StatusUnauthorized, contract.BodyWrongEnvironment, outcomeWrongEnv)
	}
	if e.rec.OrgStatus == keystore.OrgDeleted { // its keys are revoked with it; a hand-edited file may say otherwise
		return h.refuseKnown(w, as, http.StatusUnauthorized, contract.BodyKeyRevoked, outcomeRevoked, e)
	}
	if e.rec.OrgStatus != keystore.OrgActive {
		return h.refuseKnown(w, as, http.StatusForbidden, contract.BodyOrgSuspended, outcomeSuspended, e)
	}
	if e.tier == nil {
		h.logger.Error("key has a tier this config does not define; refusing", zap.String("key_id", e.rec.KeyID), zap.String("tier", e.rec.Tier))
		return h.refuse(w, as, http.StatusForbidden, contract.BodyNotEntitled, outcomeNotEntitled)
	}
	if h.RequireFamily != "" && !e.tier.entitled(h.RequireFamily) {
		w.Header()[contract.HeaderRefusedFamily] = h.refusedFamily
		return h.refuse(w, as, http.StatusForbidden, contract.BodyNotEntitled, outcomeNotEntitled)
	}
	assertion, err := h.app.identityFor(e, now)
	if err != nil {
		h.logger.Error("signing the identity assertion failed", zap.String("key_id", e.rec.KeyID), zap.Error(err))
		return h.refuse(w, as, http.StatusInternalServerError, contract.BodyInternal, outcomeError)
	}

	r = h.admit(r, e.placeholdersAt(now), assertion)
	// The resolved key is the request's caller and contract.Watcher: nothing
	// is allocated beyond the request value until an exchange calls
	// WatchCredential.
	r, q := contract.AttachRequest(r)
	q.SetCredential(&e.caller, token, e)
	q.SetIdentitySource(e)
	return next.ServeHTTP(w, r)
}

// admit publishes an authenticated caller: its {civic.*} placeholders, no
// Authorization or client-sent X-Civic-* header, the identity assertion in
// X-Civic-Identity.
func (h *Handler) admit(r *http.Request, placeholders caddy.ReplacerFunc, assertion *signedIdentity) *http.Request {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok && placeholders != nil {
		repl.Map(placeholders) // {civic.*}: see resolvedKey.placeholder
	}
	for k := range r.Header {
		if len(k) >= 8 && strings.EqualFold(k[:8], "X-Civic-") {
			delete(r.Header, k)
		}
	}
	delete(r.Header, "Authorization")
	r.Header[contract.IdentityHeader] = assertion.header
	h.app.metrics.inc(outcomeOK)
	return r
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
