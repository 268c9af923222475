package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// Handler is the civic_rate_limit HTTP handler.
type Handler struct {
	// Key to limit on (default {civic.key_id}); e.g. {remote_host}.
	Key string `json:"key,omitempty"`
	// Rate like 100/m, 10/s, 1000/h, 5/d, 5/2s (contract.ParseRate), or a
	// placeholder (default {civic.rate}).
	Rate string `json:"rate,omitempty"`
	// Policy name in the RateLimit headers (default {civic.tier}; "default" if empty).
	Policy string `json:"policy,omitempty"`

	limiter *limiter
	fixed   *contract.Rate // Rate without placeholders, parsed once
	logger  *zap.Logger
	// keyName, rateName, policyName: the placeholder when Key, Rate, Policy
	// are exactly one placeholder (read without ReplaceAll's allocation).
	keyName, rateName, policyName string
	policies                      *policyCache
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
	h.keyName, h.rateName, h.policyName = placeholderName(h.Key), placeholderName(h.Rate), placeholderName(h.Policy)
	h.policies = new(policyCache)
	if !strings.Contains(h.Rate, "{") {
		r, err := contract.ParseRate(h.Rate)
		if err != nil {
			return fmt.Errorf("civic_rate_limit: %w", err)
		}
		h.fixed = &r
	}
	appIface, err := ctx.App("civic_rate_limit") // configured, or an in-memory default
	if err != nil {
		return fmt.Errorf("civic_rate_limit: %w", err)
	}
	h.limiter = appIface.(*App).limiter
	return nil
}

// out is how the handler writes its JSON bodies: with Content-Length.
const out = contract.WithContentLength

// placeholderName returns x when tmpl is exactly one placeholder "{x}".
func placeholderName(tmpl string) string {
	if len(tmpl) > 2 && tmpl[0] == '{' && tmpl[len(tmpl)-1] == '}' && !strings.ContainsAny(tmpl[1:len(tmpl)-1], "{}\\") {
		return tmpl[1 : len(tmpl)-1]
	}
	return ""
}

// expand is repl.ReplaceAll(tmpl, "") without allocating when tmpl is one
// placeholder whose value is a string (the {civic.*} values are).
func expand(repl *caddy.Replacer, tmpl, name string) string {
	if name != "" {
		v, ok := repl.Get(name)
		if !ok || v == nil {
			return ""
		}
		if s, isString := v.(string); isString {
			return s
		}
	}
	return repl.ReplaceAll(tmpl, "")
}

// policyKey and policyStrings: per (policy name, rate as written), the parsed
// rate, the header value and the store-key prefix, built once instead of on
// every request.
type policyKey struct {
	name    string
	rawRate string
}

type policyStrings struct {
	r      contract.Rate
	sf     string // the name as a structured-field string
	header string // RateLimit-Policy value
	prefix string // store key prefix: name:quota/window_ms:
}

// policyCache is bounded: it is emptied when it reaches maxPolicies (a
// placeholder policy or rate could take many values).
type policyCache struct {
	mu sync.RWMutex
	m  map[policyKey]*policyStrings
}

const maxPolicies = 1024

// get returns the entry for a policy name and a rate as written, parsing
// the rate on a miss (an unparsable rate is not cached).
func (c *policyCache) get(name, rawRate string) (*policyStrings, error) {
	k := policyKey{name: name, rawRate: rawRate}
	c.mu.RLock()
	p := c.m[k]
	c.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	r, err := contract.ParseRate(rawRate)
	if err != nil {
		return nil, err
	}
	sf := sfString(name)
	p = &policyStrings{
		r:      r,
		sf:     sf,
		header: sf + ";q=" + strconv.FormatInt(r.Quota, 10) + ";w=" + strconv.FormatInt(ceilDiv(r.Window.Microseconds(), 1e6), 10),
		// the rate is part of the store key: a rate changed by reload starts from
		// a full quota instead of reinterpreting the old state; policies are isolated
		prefix: name + ":" + strconv.FormatInt(r.Quota, 10) + "/" + strconv.FormatInt(r.Window.Milliseconds(), 10) + ":",
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxPolicies {
		c.m = make(map[policyKey]*policyStrings)
	}
	c.m[k] = p
	c.mu.Unlock()
	return p, nil
}

// ServeHTTP admits or refuses the request (docs/api.md "Rate limits").
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	key := expand(repl, h.Key, h.keyName)
	if key == "" {
		h.logger.Error("rate limit key is empty; check the key placeholder and handler order", zap.String("key", h.Key))
		out.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	rawRate := h.Rate
	if h.fixed == nil {
		rawRate = expand(repl, h.Rate, h.rateName)
	}
	name := expand(repl, h.Policy, h.policyName)
	if name == "" {
		name = "default"
	}
	ps, err := h.policies.get(name, rawRate)
	if err != nil {
		h.logger.Error("rate limit rate does not parse", zap.String("rate", h.Rate), zap.Error(err))
		out.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	rt := ps.r
	// One allocation for both header value slices; each is capped at one
	// element so that an Add elsewhere copies instead of overwriting.
	vals := make([]string, 2)
	vals[0] = ps.header
	hdr := w.Header()
	hdr["Ratelimit-Policy"] = vals[0:1:1]

	storeKey := ps.prefix + key
	d, err := h.limiter.take(r.Context(), storeKey, rt)
	m := h.limiter.metrics.Load()
	if err != nil {
		if errors.Is(err, errStoreDown) && h.limiter.mode == modeOpen {
			m.allowed.Inc()
			return next.ServeHTTP(w, h.withCharger(r, storeKey, rt))
		}
		out.Write(w, http.StatusInternalServerError, contract.BodyInternal)
		return nil
	}
	var buf [96]byte
	b := append(buf[:0], ps.sf...)
	if d.granted == 0 {
		m.refused.Inc()
		retry := max(1, ceilDiv(d.retryAfter, 1e6))
		b = append(b, ";r=0;t="...)
		b = strconv.AppendInt(b, retry, 10)
		vals[1] = string(b)
		hdr["Ratelimit"] = vals[1:2:2]
		hdr.Set("Retry-After", strconv.FormatInt(retry, 10))
		out.Write(w, http.StatusTooManyRequests, contract.BodyRateLimited)
		return nil
	}
	m.allowed.Inc()
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, d.remaining, 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, ceilDiv(d.resetAfter, 1e6), 10)
	vals[1] = string(b)
	hdr["Ratelimit"] = vals[1:2:2]
	// A WebSocket upgrade also gets a Charger for the operations it carries
	// later (charger.go).
	return next.ServeHTTP(w, h.withCharger(r, storeKey, rt))
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
