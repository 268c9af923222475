package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// Handler is the civic_rate_limit HTTP handler.
type Handler struct {
	// Key to limit on (default {civic.key_id}); e.g. {remote_host}.
	Key string `json:"key,omitempty"`
	// Rate like 100/m, 10/s, 1000/h, or a placeholder (default {civic.rate}).
	Rate string `json:"rate,omitempty"`
	// Policy name in the RateLimit headers (default {civic.tier}; "default" if empty).
	Policy string `json:"policy,omitempty"`

	limiter *limiter
	fixed   *rate // Rate without placeholders, parsed once
	logger  *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_rate_limit", New: func() caddy.Module { return new(Handler) }}
}

// Provision fills defaults, validates a literal rate and finds the store.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.Key == "" {
		h.Key = "{civic.key_id}"
	}
	if h.Rate == "" {
		h.Rate = "{civic.rate}"
	}
	if h.Policy == "" {
		h.Policy = "{civic.tier}"
	}
	if !strings.Contains(h.Rate, "{") {
		r, err := parseRate(h.Rate)
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

const (
	bodyRefused  = `{"error":"Rate limit exceeded"}`
	bodyInternal = `{"error":"Internal Server Error"}`
)

// ServeHTTP admits or refuses the request (DESIGN.md §3.6).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		repl = caddy.NewReplacer()
	}
	key := repl.ReplaceAll(h.Key, "")
	if key == "" {
		h.logger.Error("rate limit key is empty; check the key placeholder and handler order", zap.String("key", h.Key))
		writeJSON(w, http.StatusInternalServerError, bodyInternal)
		return nil
	}
	rt := h.fixed
	if rt == nil {
		raw := repl.ReplaceAll(h.Rate, "")
		parsed, err := parseRate(raw)
		if err != nil {
			h.logger.Error("rate limit rate does not parse", zap.String("rate", h.Rate), zap.Error(err))
			writeJSON(w, http.StatusInternalServerError, bodyInternal)
			return nil
		}
		rt = &parsed
	}
	name := repl.ReplaceAll(h.Policy, "")
	if name == "" {
		name = "default"
	}
	policy := sfString(name)
	hdr := w.Header()
	hdr.Set("RateLimit-Policy", policy+";q="+strconv.FormatInt(rt.quota, 10)+";w="+strconv.FormatInt(ceilDiv(rt.window.Microseconds(), 1e6), 10))

	// the rate is part of the store key: a rate changed by reload starts from
	// a full quota instead of reinterpreting the old state; policies are isolated
	storeKey := name + ":" + strconv.FormatInt(rt.quota, 10) + "/" + strconv.FormatInt(rt.window.Milliseconds(), 10) + ":" + key
	d, err := h.limiter.take(r.Context(), storeKey, *rt)
	m := h.limiter.metrics.Load()
	if err != nil {
		if errors.Is(err, errStoreDown) && h.limiter.mode == modeOpen {
			m.allowed.Inc()
			return next.ServeHTTP(w, r)
		}
		writeJSON(w, http.StatusInternalServerError, bodyInternal)
		return nil
	}
	if d.granted == 0 {
		m.refused.Inc()
		retry := max(1, ceilDiv(d.retryAfter, 1e6))
		hdr.Set("RateLimit", policy+";r=0;t="+strconv.FormatInt(retry, 10))
		hdr.Set("Retry-After", strconv.FormatInt(retry, 10))
		writeJSON(w, http.StatusTooManyRequests, bodyRefused)
		return nil
	}
	m.allowed.Inc()
	hdr.Set("RateLimit", policy+";r="+strconv.FormatInt(d.remaining, 10)+";t="+strconv.FormatInt(ceilDiv(d.resetAfter, 1e6), 10))
	return next.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
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
