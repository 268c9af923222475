package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// pgApp provisions a civic_auth app (through Provision, as Caddy does) on a
// fresh migrated PostgreSQL database, its store wrapped to count lookups.
func pgApp(t *testing.T, configure func(*App)) (*App, *countingStore, string) {
	t.Helper()
	dsn, pool := migratedDB(t)
	t.Setenv("CIVIC_AUTH_TEST_DSN", dsn)
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	a := &App{
		Keys:           KeysConfig{Source: "postgres", DSN: "{env.CIVIC_AUTH_TEST_DSN}"},
		Environment:    "live",
		IdentitySecret: "{env.CIVIC_AUTH_TEST_SECRET}",
		CacheTTL:       caddy.Duration(time.Hour),
		Tiers:          map[string]TierConfig{"enterprise": {Rate: "1000/m", Families: []string{"bills"}}},
	}
	configure(a)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Cleanup() })
	cs := &countingStore{store: a.store}
	a.store = cs
	return a, cs, issue(t, pool, "acme", "enterprise", "live").Key
}

// TestUnknownKeysNeverEvictKnown: twice the negative cache's capacity of
// random unknown keys, against a known-key cache far smaller than that, does
// not evict the known key (no second lookup) and leaves the negative cache
// at its bound.
func TestUnknownKeysNeverEvictKnown(t *testing.T) {
	const negative = 100
	a, st, key := pgApp(t, func(a *App) {
		a.CacheSize = 2
		a.NegativeCacheSize = negative
		a.NegativeCacheTTL = caddy.Duration(time.Hour)
	})
	ctx := context.Background()
	h := keystore.HashKey(key)
	if e, _, err := a.resolve(ctx, h, time.Now()); err != nil || !e.found {
		t.Fatalf("valid key: %+v %v", e, err)
	}
	for i := 0; i < 2*negative; i++ {
		k, err := keystore.NewKey("live")
		if err != nil {
			t.Fatal(err)
		}
		if e, looked, err := a.resolve(ctx, keystore.HashKey(k), time.Now()); err != nil || e.found || !looked {
			t.Fatalf("unknown key %d: %+v looked=%v %v", i, e, looked, err)
		}
	}
	if n := st.n.Load(); n != 1+2*negative {
		t.Fatalf("%d lookups, want %d", n, 1+2*negative)
	}
	if known, unknown := a.cache.sizes(); known != 1 || unknown != negative {
		t.Fatalf("cache holds %d known, %d unknown; want 1, %d", known, unknown, negative)
	}
	e, looked, err := a.resolve(ctx, h, time.Now())
	if err != nil || !e.found || looked || st.n.Load() != 1+2*negative {
		t.Fatalf("valid key after the flood: found=%v looked=%v %v, %d lookups: its entry was evicted", e != nil && e.found, looked, err, st.n.Load())
	}

	// Issuing a key notifies key:<hash>, which must clear a negative entry.
	k, _ := keystore.NewKey("live")
	kh := keystore.HashKey(k)
	_, _, _ = a.resolve(ctx, kh, time.Now())
	a.invalidate("key:" + kh.String())
	if a.cache.get(kh) != nil {
		t.Fatal("notification kept the negative entry")
	}
}

// gatedStore holds every lookup until all callers have entered resolve, so
// that without collapsing each of them would reach the store.
type gatedStore struct {
	store
	calls   atomic.Int64
	entered chan struct{} // closed when every goroutine is about to resolve
}

func (g *gatedStore) lookup(ctx context.Context, h keystore.Hash) (keystore.Record, error) {
	g.calls.Add(1)
	<-g.entered
	return g.store.lookup(ctx, h)
}

// TestConcurrentLookupsCollapse: 50 goroutines resolving one uncached hash
// make one PostgreSQL lookup between them, and all get its answer.
func TestConcurrentLookupsCollapse(t *testing.T) {
	a, _, key := pgApp(t, func(*App) {})
	for _, c := range []struct {
		name  string
		key   string
		found bool
	}{{"known key", key, true}, {"unknown key", "cg_live_" + key[9:] + "0", false}} {
		t.Run(c.name, func(t *testing.T) {
			const n = 50
			g := &gatedStore{store: a.store, entered: make(chan struct{})}
			a.store = g
			h := keystore.HashKey(c.key)
			var entered atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan string, n)
			for i := 0; i < n; i++ {
				wg.Go(func() {
					if entered.Add(1) == n {
						close(g.entered)
					}
					e, _, err := a.resolve(context.Background(), h, time.Now())
					if err != nil || e.found != c.found {
						errs <- "wrong answer"
					}
				})
			}
			wg.Wait()
			close(errs)
			if len(errs) != 0 {
				t.Fatalf("%d goroutines got a wrong answer", len(errs))
			}
			if got := g.calls.Load(); got != 1 {
				t.Fatalf("%d PostgreSQL lookups for one hash, want 1", got)
			}
			a.store = g.store
		})
	}
}
