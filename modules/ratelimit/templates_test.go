package ratelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// TestHandlerTemplates: key, rate, policy and cost in each form a Caddyfile
// can give — an expression of several parts, one placeholder, a constant,
// a placeholder left unset — resolve per request as Caddy's replacer would.
func TestHandlerTemplates(t *testing.T) {
	h := &Handler{Key: "k-{http.request.header.X-Key}-{" + contract.CivicOrg + "}", Rate: "{" + contract.CivicRate + "}",
		Policy: "bronze", Cost: "{" + contract.CivicCostBudget + "}", logger: zap.NewNop(),
		// maxKeys room for every key: at 100 (one per shard) a key that
		// hashed into key a's shard evicted it, by the seed's luck
		limiter: newLimiter(limiterConfig{mode: modeLocal, maxKeys: 100_000})}
	// One instant for every request: the wall clock could cross a window
	// boundary between them, where the sliding window admits again.
	now := time.Now()
	h.limiter.clock = func() time.Time { return now }
	h.policies = &policyCache{share: h.limiter.share, maxLease: h.limiter.maxLease}
	h.parseTemplates()
	serve := func(key string, org any) (int, http.Header) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-Key", key)
		repl := caddyhttp.NewTestReplacer(req)
		repl.Set(contract.CivicRate, "2/m")
		repl.Set(contract.CivicOrg, org)
		req = req.WithContext(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl))
		w := &statusWriter{h: http.Header{}}
		if err := h.ServeHTTP(w, req, nextFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
			t.Fatal(err)
		}
		return w.status, w.h
	}
	for i, want := range []int{0, 0, http.StatusTooManyRequests} {
		if status, hdr := serve("a", 7); status != want {
			t.Fatalf("request %d of key a: status %d, want %d", i+1, status, want)
		} else if p := hdr.Get("RateLimit-Policy"); p != `"bronze";q=2;w=60` {
			t.Fatalf("RateLimit-Policy %q: want the constant policy, no cost budget (unset)", p)
		}
	}
	if status, _ := serve("b", 7); status != 0 {
		t.Fatalf("another header: status %d", status)
	}
	if status, _ := serve("a", 8); status != 0 {
		t.Fatalf("another organization: status %d", status)
	}
	if status, _ := serve("a", "7"); status != http.StatusTooManyRequests { // 7 is keyed by its text, as ReplaceAll writes it
		t.Fatalf("organization \"7\" after 7: status %d, want the same key's 429", status)
	}
}
