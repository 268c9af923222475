package auth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/auth/accesstoken"
	"github.com/civicgate/civicgate/modules/contract"
)

// tokenApp is benchApp's app (no key store behind it, the same tier) with a
// jwt block over p — tier_claim plan, org_claim org_id, require_scope
// changes changes:read, cache_size cacheSize (0: the default) — provisioned
// as App.Provision does it: the verifier has fetched p's key set.
func tokenApp(tb testing.TB, p *tokenIdP, cacheSize int) *App {
	tb.Helper()
	m, err := newAuthMetrics(nil)
	if err != nil {
		tb.Fatal(err)
	}
	a := &App{
		Environment: "live",
		secret:      []byte(testSecret),
		idTTL:       30 * time.Second,
		timeout:     time.Second,
		tiers:       map[string]*tierPolicy{"enterprise": mustTier(tb, "enterprise", TierConfig{Rate: "1000/m", Families: []string{"bills", "members", "changes"}})},
		cache:       newKeyCache(1000, 1000, time.Hour, time.Second),
		flight:      new(singleflight.Group),
		store:       indexStore(nil),
		metrics:     m,
		logger:      zap.NewNop(),
		JWT: &JWTConfig{Issuer: p.Issuer(), Audience: tokenAudience, Algorithms: []string{"RS256", "ES256", "EdDSA"},
			TierClaim: "plan", OrgClaim: "org_id", RequireScopes: [][2]string{{"changes", "changes:read"}}, CacheSize: cacheSize},
	}
	// provisionTokens' steps, with the verifier's log discarded (Caddy's
	// default logger would write into the benchmark's result lines).
	cfg := a.JWT.verifierConfig(caddy.NewReplacer(), []string{"enterprise"}, slog.New(slog.DiscardHandler))
	v, err := accesstoken.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	a.tokens = newTokenAuth(v, a, resourceMetadataURL("", cfg.Audience))
	a.challenge = a.tokens.plain
	tb.Cleanup(func() { _ = a.Cleanup() })
	return a
}

// benchToken is a token of p for sub, tier enterprise, valid for an hour.
func benchToken(p *tokenIdP, k testidp.Key, sub string) string {
	return testidp.Sign(k, p.claims(sub, "enterprise", "org_bench", time.Hour))
}

// BenchmarkHandlerCachedToken is BenchmarkHandlerCachedKey with an access
// token seen before: header parse, SHA-256 of the token, the resolved-token
// cache, the deny list and organization checks, require_family, seven
// placeholders, header stripping, the (reused) identity assertion and the
// credential context. Target: at most ≈ 1 µs over the key path and no
// allocation beyond its.
func BenchmarkHandlerCachedToken(b *testing.B) {
	idpKeys()
	p := newTokenIdP(b, idpRSAKey)
	tok := benchToken(p, idpRSAKey, "auth0|bench")
	h := &Handler{RequireFamily: "bills", app: tokenApp(b, p, 0), logger: zap.NewNop()}
	repl := caddy.NewReplacer()
	r := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	auth := []string{"Bearer " + tok}
	w := &statusWriter{discardWriter: discardWriter{h: http.Header{}}}
	ok := 0
	next := nextFunc(func(http.ResponseWriter, *http.Request) error { ok++; return nil })
	r.Header["Authorization"] = auth
	if err := h.ServeHTTP(w, r, next); err != nil || ok != 1 {
		b.Fatalf("the token was not admitted: status %d, %v", w.status, err)
	}
	ok = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Header["Authorization"] = auth
		if err := h.ServeHTTP(w, r, next); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if ok != b.N || r.Header.Get(contract.IdentityHeader) == "" {
		b.Fatalf("%d of %d requests passed", ok, b.N)
	}
	if v, _ := repl.Get(contract.CivicKeyID); v != "jwt:sub:auth0|bench" {
		b.Fatalf("civic.key_id = %v", v)
	}
	b.ReportMetric(float64(len(tok)), "token-bytes")
}

// benchHandlerFirstSeen is the whole handler on a token neither cache holds:
// with cache_size 1 and a ring of pre-signed tokens (signing stays outside
// the timer), every request verifies its token — header, claims, key,
// signature —, resolves it and signs its identity assertion.
func benchHandlerFirstSeen(b *testing.B, k testidp.Key) {
	p := newTokenIdP(b, k)
	toks := make([][]string, 64)
	for i := range toks {
		toks[i] = []string{"Bearer " + benchToken(p, k, fmt.Sprintf("auth0|bench-%d", i))}
	}
	h := &Handler{RequireFamily: "bills", app: tokenApp(b, p, 1), logger: zap.NewNop()}
	r := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := &statusWriter{discardWriter: discardWriter{h: http.Header{}}}
	ok := 0
	next := nextFunc(func(http.ResponseWriter, *http.Request) error { ok++; return nil })
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Header["Authorization"] = toks[i%len(toks)]
		if err := h.ServeHTTP(w, r, next); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if ok != b.N {
		b.Fatalf("%d of %d requests passed (status %d)", ok, b.N, w.status)
	}
	if s := h.app.tokens.verifier.Stats(); s.Verified < uint64(b.N) {
		b.Fatalf("%d full verifications for %d requests: the benchmark measured cache hits", s.Verified, b.N)
	}
	b.ReportMetric(float64(len(toks[0][0])-len("Bearer ")), "token-bytes")
}

func BenchmarkHandlerFirstSeenRS256(b *testing.B) { idpKeys(); benchHandlerFirstSeen(b, idpRSAKey) }
func BenchmarkHandlerFirstSeenES256(b *testing.B) { idpKeys(); benchHandlerFirstSeen(b, idpECKey) }
