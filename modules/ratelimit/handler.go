package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// Handler is the civic_rate_limit HTTP handler.
type Handler struct {
	// Key to limit on (default {civic.key_id}); e.g. {remote_host}.
	Key string `json:"key,omitempty"`
	// Rate list like 100/m, or 100/m 20000/d (contract.ParseRates: up to
	// four rates over distinct windows), or a placeholder (default
	// {civic.rate}).
	Rate string `json:"rate,omitempty"`
	// Policy name in the RateLimit headers (default {civic.tier}; "default" if empty).
	Policy string `json:"policy,omitempty"`
	// Cost budget in GraphQL cost points per window, like 50000/h, or a
	// placeholder ({civic.cost_budget}); empty (the default): none. A
	// placeholder that resolves to "" means no budget for that request.
	Cost string `json:"cost,omitempty"`
	// Count is what a quota and cost budget count: "per_key" (the default:
	// the Key) or "per_organization" ({civic.org}, so that several keys of
	// one organization, a rotation overlap included, share one count;
	// docs/design.md D81).
	Count string `json:"count,omitempty"`
	// CountTiers limits Count per_organization to these policy names
	// (tiers); empty: every policy of the handler.
	CountTiers []string `json:"count_tiers,omitempty"`

	limiter *limiter
	logger  *zap.Logger
	// key, rate, policy, cost: Key, Rate, Policy and Cost read once
	// (parseTemplates); a constant Rate or Cost is checked at provision.
	key, rate, policy, cost caddyopt.Template
	policies                *policyCache
	perOrg                  bool // Count is per_organization
}

// The values of Count.
const (
	countPerKey = "per_key"
	countPerOrg = "per_organization"
)

// countKey is the key a request of policy name counts against: the
// organization's id under count per_organization (for name, when
// CountTiers names some), else key.
func (h *Handler) countKey(repl *caddy.Replacer, name, key string) string {
	if !h.perOrg || len(h.CountTiers) > 0 && !slices.Contains(h.CountTiers, name) {
		return key
	}
	return orgTemplate.Expand(repl)
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_rate_limit", New: func() caddy.Module { return new(Handler) }}
}

// Provision fills defaults, validates a literal rate and finds the store.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.Key == "" {
		h.Key = "{" + contract.CivicKeyID + "}"
	}
	if h.Rate == "" {
		h.Rate = "{" + contract.CivicRate + "}"
	}
	if h.Policy == "" {
		h.Policy = "{" + contract.CivicTier + "}"
	}
	h.parseTemplates()
	switch h.Count {
	case "", countPerKey:
	case countPerOrg:
		h.perOrg = true
	default:
		return fmt.Errorf("civic_rate_limit: count: want %s or %s, got %q", countPerKey, countPerOrg, h.Count)
	}
	if len(h.CountTiers) > 0 && !h.perOrg {
		return fmt.Errorf("civic_rate_limit: count: tiers are only for %s", countPerOrg)
	}
	if h.rate.Constant() {
		if _, err := contract.ParseRates(h.Rate); err != nil {
			return fmt.Errorf("civic_rate_limit: %w", err)
		}
	}
	if h.Cost != "" && h.cost.Constant() {
		if _, err := contract.ParseRate(h.Cost); err != nil {
			return fmt.Errorf("civic_rate_limit: cost: %w", err)
		}
	}
	appIface, err := ctx.App("civic_rate_limit") // configured, or an in-memory default
	if err != nil {
		return fmt.Errorf("civic_rate_limit: %w", err)
	}
	h.limiter = appIface.(*App).limiter
	h.policies = &policyCache{share: h.limiter.share, maxLease: h.limiter.maxLease}
	return nil
}

// bodyWriter writes the handler's JSON bodies: with Content-Length.
var bodyWriter = contract.JSONWriter{ContentLength: true}

// parseTemplates reads Key, Rate, Policy and Cost as templates.
func (h *Handler) parseTemplates() {
	h.key, h.rate = caddyopt.ParseTemplate(h.Key), caddyopt.ParseTemplate(h.Rate)
	h.policy, h.cost = caddyopt.ParseTemplate(h.Policy), caddyopt.ParseTemplate(h.Cost)
}

// ServeHTTP admits or refuses the request (docs/api.md "Rate limits").
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	key := h.key.Expand(repl)
	if key == "" {
		h.logger.Error("rate limit key is empty; check the key placeholder and handler order", zap.String("key", h.Key))
		bodyWriter.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	rawRate := h.rate.Expand(repl)
	name := h.policy.Expand(repl)
	if name == "" {
		name = "default"
	}
	keyOwn := key // the handler's key, before count per_organization
	if key = h.countKey(repl, name, key); key == "" {
		h.logger.Error("rate limit organization is empty under count per_organization; check that civic_auth runs first")
		bodyWriter.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	rawCost := h.cost.Expand(repl) // "": no Cost, or a tier without a budget
	hp, err := h.policies.get(name, rawRate, rawCost)
	if err != nil {
		h.logger.Error("rate limit rate or cost budget does not parse", zap.String("rate", h.Rate), zap.String("cost", h.Cost), zap.Error(err))
		bodyWriter.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	// One allocation for both header value slices (and, with usage counting
	// or a cost budget, the admission that carries them: the same
	// allocation); each is
	// capped at one element so that an Add elsewhere copies instead of
	// overwriting.
	var x *admission
	var vals []string
	if h.limiter.usage != nil || hp.cost != nil {
		x = newAdmission(hp)
		vals = x.vals[:]
	} else {
		vals = make([]string, 2)
	}
	vals[0] = hp.header
	hdr := w.Header()
	hdr["Ratelimit-Policy"] = vals[0:1:1]

	storeKey := hp.req.prefix + key
	ctx, span := startSpan(r.Context(), "civic_rate_limit")
	d, err := h.limiter.take(ctx, hp.req, storeKey, key, 1)
	if span != nil {
		endDecisionSpan(span, name, &d, err, h.limiter.mode)
	}
	m := h.limiter.metrics.Load()
	if err != nil {
		if errors.Is(err, errStoreDown) && h.limiter.mode == modeOpen {
			m.allowed.Inc()
			return h.serveAdmitted(w, r, next, repl, hp, storeKey, key, nil, x)
		}
		bodyWriter.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	var buf [96]byte
	if d.granted == 0 {
		m.refused.Inc()
		h.countRefused(r, repl, key, &d)
		h.noteCrossings(repl, hp.req, usage.KindRequests, key != keyOwn, keyOwn, &d, hp.req.refusing(&d, 1))
		retry := max(1, ceilDiv(d.retryAfter, 1e6))
		b := append(buf[:0], hp.req.names[hp.req.refusing(&d, 1)]...)
		b = append(b, ";r=0;t="...)
		b = strconv.AppendInt(b, retry, 10)
		vals[1] = string(b)
		hdr["Ratelimit"] = vals[1:2:2]
		hdr.Set("Retry-After", strconv.FormatInt(retry, 10))
		bodyWriter.Write(w, http.StatusTooManyRequests, contract.BodyRateLimited)
		return nil
	}
	m.allowed.Inc()
	h.noteCrossings(repl, hp.req, usage.KindRequests, key != keyOwn, keyOwn, &d, -1)
	i := hp.req.closest(&d)
	vals[1] = string(appendRateLimit(buf[:0], hp.req.names[i], d.remaining[i], d.resetAfter[i]))
	hdr["Ratelimit"] = vals[1:2:2]
	return h.serveAdmitted(w, r, next, repl, hp, storeKey, key, &d, x)
}

// appendRateLimit appends one RateLimit member: <name>;r=<remaining>;t=<s>.
func appendRateLimit(b []byte, name string, remaining, resetAfter int64) []byte {
	b = append(b, name...)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, remaining, 10)
	b = append(b, ";t="...)
	return strconv.AppendInt(b, ceilDiv(resetAfter, 1e6), 10)
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// sfString renders a policy name as a structured-field string (RFC 9651):
// quoted, printable ASCII only, with \ and " escaped; "default" if empty.
func sfString(s string) string {
	if s == "" {
		s = "default"
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
