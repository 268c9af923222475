package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// benchApp is a provisioned-by-hand app over an in-memory store: the cached
// path under test never touches the store.
func benchApp(b *testing.B, key string) *App {
	b.Helper()
	m, err := newAuthMetrics(nil)
	if err != nil {
		b.Fatal(err)
	}
	return &App{
		Environment: "live",
		secret:      []byte(testSecret),
		idTTL:       30 * time.Second,
		timeout:     time.Second,
		tiers:       map[string]*tierPolicy{"enterprise": mustTier(b, "enterprise", TierConfig{Rate: "1000/m", Families: []string{"bills", "members"}})},
		cache:       newKeyCache(1000, 1000, time.Hour, time.Second),
		flight:      new(singleflight.Group),
		store: indexStore(map[keystore.Hash]keystore.Record{keystore.HashKey(key): {
			KeyID: "key_bench", OrgID: "org_bench", OrgName: "bench", OrgStatus: "active", Env: "live", Tier: "enterprise", Status: "active",
		}}),
		metrics: m,
		logger:  zap.NewNop(),
	}
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

type nextFunc func(http.ResponseWriter, *http.Request) error

func (f nextFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) error { return f(w, r) }

// BenchmarkHandlerCachedKey is one authenticated request with a cached key:
// header parse, SHA-256, cache hit, checks, seven placeholders, header
// stripping, the (reused) identity assertion and the credential context.
func BenchmarkHandlerCachedKey(b *testing.B) {
	key, err := keystore.NewKey("live")
	if err != nil {
		b.Fatal(err)
	}
	h := &Handler{RequireFamily: "bills", app: benchApp(b, key), logger: zap.NewNop()}
	repl := caddy.NewReplacer()
	r := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	auth := []string{"Bearer " + key}
	w := &discardWriter{h: http.Header{}}
	ok := 0
	next := nextFunc(func(http.ResponseWriter, *http.Request) error { ok++; return nil })
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
	if v, _ := repl.Get(contract.CivicRate); v != "1000/m" {
		b.Fatalf("civic.rate = %v", v)
	}
}

// BenchmarkSHA256Key is the baseline: hashing the key alone.
func BenchmarkSHA256Key(b *testing.B) {
	key, _ := keystore.NewKey("live")
	b.ReportAllocs()
	var sink keystore.Hash
	for i := 0; i < b.N; i++ {
		sink = keystore.HashKey(key)
	}
	_ = sink
}

// BenchmarkHandlerRefusals: the refusal paths (no lookup, or an unknown key
// cached as unknown, or a tier without the required family) write a fixed
// body and must not allocate.
func BenchmarkHandlerRefusals(b *testing.B) {
	key, err := keystore.NewKey("live")
	if err != nil {
		b.Fatal(err)
	}
	unknown, err := keystore.NewKey("live")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name, require string
		auth          []string
		status        int
	}{
		{"missing", "", nil, http.StatusUnauthorized},
		{"malformed", "", []string{"Basic abc"}, http.StatusUnauthorized},
		{"invalid", "", []string{"Bearer " + unknown}, http.StatusUnauthorized},
		{"not_entitled", "changes", []string{"Bearer " + key}, http.StatusForbidden},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := &Handler{RequireFamily: tc.require, app: benchApp(b, key), logger: zap.NewNop()}
			r := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
			r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
			w := &statusWriter{discardWriter: discardWriter{h: http.Header{}}}
			next := nextFunc(func(http.ResponseWriter, *http.Request) error { b.Fatal("admitted"); return nil })
			b.ReportAllocs()
			for b.Loop() {
				if tc.auth == nil {
					delete(r.Header, "Authorization")
				} else {
					r.Header["Authorization"] = tc.auth
				}
				if err := h.ServeHTTP(w, r, next); err != nil || w.status != tc.status {
					b.Fatalf("status %d, %v", w.status, err)
				}
			}
		})
	}
}

type statusWriter struct {
	discardWriter
	status int
}

func (s *statusWriter) WriteHeader(status int) { s.status = status }
