package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sync/singleflight"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

const bodyKeyInURLText = `{"errors":[{"message":"API key must not be sent in the URL; use the Authorization header"}]}`

// countingStore counts the lookups that reach the store under it (a real
// store: PostgreSQL in the integration tests, a keys-file index here).
type countingStore struct {
	store
	n atomic.Int64
}

func (c *countingStore) lookup(ctx context.Context, h keystore.Hash) (keystore.Record, error) {
	c.n.Add(1)
	return c.store.lookup(ctx, h)
}

var activeRecord = keystore.Record{KeyID: "key_unit", OrgID: "org_unit", OrgName: "unit", OrgStatus: "active", Env: "live", Tier: "enterprise", Status: "active"}

// unitApp is an app set up by hand over st (no Caddy), with the failed-lookup
// limit failed ("" default, "off"), its logs observed at DEBUG.
func unitApp(t testing.TB, st store, failed string) (*App, *observer.ObservedLogs) {
	t.Helper()
	m, err := newAuthMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := newFailLimiter(failed, 100)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	a := &App{
		Environment: "live", secret: []byte(testSecret), idTTL: 30 * time.Second, timeout: time.Second,
		tiers: map[string]*tierPolicy{"enterprise": mustTier(t, "enterprise", TierConfig{Rate: "1000/m", Families: []string{"bills"}})},
		cache: newKeyCache(100, 100, time.Hour, time.Hour), flight: new(singleflight.Group), failed: limiter,
		store: st, metrics: m, logger: zap.New(core),
	}
	return a, logs
}

func counterValue(t testing.TB, a *App, outcome string) float64 {
	t.Helper()
	var mt dto.Metric
	if err := a.metrics.requests[outcome].Write(&mt); err != nil {
		t.Fatal(err)
	}
	return mt.GetCounter().GetValue()
}

// serve runs one request through h; client, when set, is Caddy's client IP.
func serve(h *Handler, target, client string, header ...string) (*httptest.ResponseRecorder, bool) {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.RemoteAddr = "192.0.2.1:4000" // the same peer for every client: only the client IP var tells them apart
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	ctx := context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer())
	if client != "" {
		ctx = context.WithValue(ctx, caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: client})
	}
	w := httptest.NewRecorder()
	passed := false
	_ = h.ServeHTTP(w, r.WithContext(ctx), nextFunc(func(w http.ResponseWriter, _ *http.Request) error {
		passed = true
		w.WriteHeader(http.StatusOK)
		return nil
	}))
	return w, passed
}

func encodeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func TestKeyInURLRefused(t *testing.T) {
	st := &countingStore{store: indexStore(map[keystore.Hash]keystore.Record{keystore.HashKey(wellFormed): activeRecord})}
	a, logs := unitApp(t, st, "")
	h := &Handler{app: a, logger: a.logger}
	before := counterValue(t, a, outcomeKeyInURL) // counters are the process's: other tests count too
	secret := wellFormed[8:]
	cases := []struct {
		name, target, loggedPath string
		header                   bool
	}{
		{"access_token, no header", "/bills?limit=2&access_token=" + wellFormed, "/bills", false},
		{"api_key and a valid header", "/bills?api_key=" + wellFormed, "/bills", true},
		{"encoded underscores", "/bills?access_token=cg%5Flive%5F" + secret, "/bills", false},
		{"lowercase hex", "/bills?access_token=cg%5flive%5f" + secret, "/bills", false},
		{"every byte encoded", "/bills?access_token=" + encodeAll(wellFormed), "/bills", false},
		{"test key", "/bills?k=cg_test_" + secret, "/bills", true},
		{"in the path", "/bills/" + wellFormed, "/bills/cg_live_REDACTED", true},
		{"encoded in the path", "/v1/cg%5Flive%5F" + secret + "/x", "/v1/cg_live_REDACTED/x", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.header {
				hdr = []string{"Authorization", "Bearer " + wellFormed}
			}
			w, passed := serve(h, c.target, "203.0.113.7", hdr...)
			if passed || w.Code != http.StatusBadRequest || w.Body.String() != bodyKeyInURLText {
				t.Fatalf("got %d %q (passed %v), want 400 %s", w.Code, w.Body, passed, bodyKeyInURLText)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if wa := w.Header().Values("Www-Authenticate"); len(wa) != 0 {
				t.Fatalf("WWW-Authenticate %q on a 400", wa)
			}
		})
	}
	if n := st.n.Load(); n != 0 {
		t.Fatalf("%d store lookups for keys in URLs, want 0", n)
	}
	if got := counterValue(t, a, outcomeKeyInURL) - before; got != float64(len(cases)) {
		t.Fatalf("key_in_url counted %v more, want %d", got, len(cases))
	}
	entries := logs.FilterMessage("API key sent in the URL; refused").All()
	if len(entries) != len(cases) {
		t.Fatalf("%d log entries, want %d", len(entries), len(cases))
	}
	for i, e := range entries {
		fields := e.ContextMap()
		if e.Level != zapcore.InfoLevel || fields["path"] != cases[i].loggedPath {
			t.Errorf("%s: logged %s %v, want info with path %s", cases[i].name, e.Level, fields, cases[i].loggedPath)
		}
		if s := fmt.Sprint(fields); strings.Contains(s, secret[:keystore.ShapeMinSecret]) || strings.Contains(s, "access_token") || strings.Contains(s, "limit=") {
			t.Errorf("%s: the log holds the key or the query: %s", cases[i].name, s)
		}
	}

	// Controls: nothing key-shaped in the URL, so the header decides.
	for _, target := range []string{"/bills?q=cg_live_H0SQ", "/bills?q=H.R.%202882&limit=2", "/bills/cg_live_" + secret[:keystore.ShapeMinSecret-1]} {
		if w, _ := serve(h, target, "203.0.113.7"); w.Code != http.StatusUnauthorized || w.Body.String() != `{"error":"Missing bearer token"}` {
			t.Errorf("%s: %d %q, want the 401 for a missing header", target, w.Code, w.Body)
		}
		if w, passed := serve(h, target, "203.0.113.7", "Authorization", "Bearer "+wellFormed); !passed {
			t.Errorf("%s with a valid header: %d %q", target, w.Code, w.Body)
		}
	}
}

// TestKeyInURLCheckDoesNotAllocate pins the cost of the check on ordinary
// URLs (no "cg_", no '%') and on encoded ones, and the whole handler's
// allocations for a cached key (BenchmarkHandlerCachedKey: 2).
func TestKeyInURLCheckDoesNotAllocate(t *testing.T) {
	for _, raw := range []string{"/v1/graphql", "/bills?limit=2&q=hr2882", "/bills?q=H.R.%202882&cursor=abc%3D"} {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = keyInURL(u) }); n != 0 || keyInURL(u) != "" {
			t.Fatalf("%s: %v allocations, found %q", raw, n, keyInURL(u))
		}
	}

	a, _ := unitApp(t, indexStore(map[keystore.Hash]keystore.Record{keystore.HashKey(wellFormed): activeRecord}), "")
	h := &Handler{RequireFamily: "bills", app: a, logger: zap.NewNop()}
	r := httptest.NewRequest(http.MethodPost, "/v1/graphql", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	auth := []string{"Bearer " + wellFormed}
	w := &discardWriter{h: http.Header{}}
	next := nextFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	r.Header["Authorization"] = auth
	if err := h.ServeHTTP(w, r, next); err != nil { // warm the cache and the identity
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(200, func() {
		r.Header["Authorization"] = auth
		_ = h.ServeHTTP(w, r, next)
	})
	if n > 2 {
		t.Fatalf("cached-key request: %v allocations, want ≤ 2", n)
	}
}
