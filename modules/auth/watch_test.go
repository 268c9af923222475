package auth

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keycmd"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// provisionWatchApp provisions a civic_auth app on the PostgreSQL store at
// dsn with the given watch_interval, not started.
func provisionWatchApp(t *testing.T, dsn string, interval time.Duration) *App {
	t.Helper()
	return provisionWatchAppTiers(t, dsn, interval, map[string]TierConfig{"free": {Rate: "30/m", Families: []string{"bills"}}})
}

// provisionWatchAppTiers is provisionWatchApp with the given tiers.
func provisionWatchAppTiers(t *testing.T, dsn string, interval time.Duration, tiers map[string]TierConfig) *App {
	t.Helper()
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	a := &App{
		Keys:           KeysConfig{Source: "postgres", DSN: dsn},
		Environment:    "live",
		IdentitySecret: "{env.CIVIC_AUTH_TEST_SECRET}",
		LookupTimeout:  caddy.Duration(time.Second),
		WatchInterval:  caddy.Duration(interval),
		Tiers:          tiers,
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Cleanup() })
	return a
}

func startApp(t *testing.T, a *App) {
	t.Helper()
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
}

// watchKey admits one request with key through the civic_auth handler and
// starts a watch with the Watcher the request carried on.
func watchKey(t *testing.T, a *App, key string) contract.CredentialWatch {
	t.Helper()
	h := &Handler{app: a, logger: zap.NewNop()}
	r := httptest.NewRequest(http.MethodGet, "/v1/graphql", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	var watcher contract.Watcher
	next := nextFunc(func(_ http.ResponseWriter, r *http.Request) error {
		if q, ok := contract.RequestFrom(r.Context()); ok {
			watcher = q.Watcher()
		}
		return nil
	})
	rec := httptest.NewRecorder()
	if err := h.ServeHTTP(rec, r, next); err != nil || watcher == nil {
		t.Fatalf("request not admitted with a Watcher: %d %q %v", rec.Code, rec.Body.String(), err)
	}
	w := watcher.WatchCredential()
	t.Cleanup(w.Stop)
	return w
}

// awaitFired waits for w to fire with want.
func awaitFired(t *testing.T, w contract.CredentialWatch, want string, within time.Duration) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(within):
		t.Fatalf("watch still open after %s, want it fired with %q", within, want)
	}
	if got := w.Reason(); got != want {
		t.Fatalf("Reason %q, want %q", got, want)
	}
}

func expectOpen(t *testing.T, w contract.CredentialWatch) {
	t.Helper()
	select {
	case <-w.Done():
		t.Fatalf("watch of an active key fired: %q", w.Reason())
	default:
	}
	if r := w.Reason(); r != "" {
		t.Fatalf("open watch has Reason %q", r)
	}
}

// awaitListening waits until the app's key-change listener has started LISTEN.
func awaitListening(t *testing.T, a *App) {
	t.Helper()
	testenv.EventuallyTrue(t, 30*time.Second, "the key-change listener to start", func() bool { return a.listens.Load() > 0 })
}

// awaitRounds waits until the app has finished n more recheck rounds.
func awaitRounds(t *testing.T, a *App, n int64, within time.Duration) {
	t.Helper()
	target := a.watches.rounds.Load() + n
	testenv.EventuallyTrue(t, within, fmt.Sprintf("%d more recheck rounds", n), func() bool {
		return a.watches.rounds.Load() >= target
	})
}

// keysCLI runs `civicgate keys <args>` against dsn, as an operator would.
func keysCLI(t *testing.T, dsn string, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := keycmd.Run(context.Background(), args, &out, &errb, func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return ""
	}); code != 0 {
		t.Fatalf("keys %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
}

// TestWatchFiresOnKeyChanges: revoke, rotate and suspend done with the
// `civicgate keys` command reach open watches through NOTIFY. The fallback
// interval is a minute, so only the notification can fire them within
// notifyWithin.
func TestWatchFiresOnKeyChanges(t *testing.T) {
	dsn, pool := migratedDB(t)
	a := provisionWatchApp(t, dsn, time.Minute)
	startApp(t, a)
	// A notification sent before LISTEN starts is caught by the recheck LISTEN
	// starts with, not by NOTIFY; wait for the listener so NOTIFY is tested.
	awaitListening(t, a)
	bystander := issue(t, pool, "bystander", "free", "live")
	bw := watchKey(t, a, bystander.Key)

	t.Run("revoke", func(t *testing.T) {
		k := issue(t, pool, "rev", "free", "live")
		w := watchKey(t, a, k.Key)
		keysCLI(t, dsn, "revoke", k.ID)
		awaitFired(t, w, contract.MsgKeyRevoked, notifyWithin)
	})
	t.Run("rotate", func(t *testing.T) {
		k := issue(t, pool, "rot", "free", "live")
		w := watchKey(t, a, k.Key)
		keysCLI(t, dsn, "rotate", "--org", "rot", "--env", "live", "--overlap", "0")
		awaitFired(t, w, contract.MsgKeyRotated, notifyWithin)
	})
	t.Run("suspend", func(t *testing.T) {
		k1 := issue(t, pool, "susp", "free", "live")
		k2 := issue(t, pool, "susp", "free", "live")
		ws := []contract.CredentialWatch{watchKey(t, a, k1.Key), watchKey(t, a, k1.Key), watchKey(t, a, k2.Key)}
		keysCLI(t, dsn, "suspend", "--org", "susp")
		for _, w := range ws {
			awaitFired(t, w, contract.MsgOrgSuspended, notifyWithin)
		}
	})
	t.Run("revoke through keystore", func(t *testing.T) {
		k := issue(t, pool, "rev2", "free", "live")
		w := watchKey(t, a, k.Key)
		if _, err := keystore.Revoke(context.Background(), pool, k.ID); err != nil {
			t.Fatal(err)
		}
		awaitFired(t, w, contract.MsgKeyRevoked, notifyWithin)
	})
	expectOpen(t, bw)
	if n, keys := a.watches.size(); n != 1 || keys != 1 {
		t.Fatalf("registry holds %d watches of %d keys, want only the bystander's", n, keys)
	}
}

// TestWatchActiveKeyStaysOpen: rounds of the fallback recheck leave the watch
// of an active key open; an organization resumed stays open too.
func TestWatchActiveKeyStaysOpen(t *testing.T) {
	dsn, pool := migratedDB(t)
	a := provisionWatchApp(t, dsn, 50*time.Millisecond)
	startApp(t, a)
	k := issue(t, pool, "acme", "free", "live")
	w := watchKey(t, a, k.Key)
	awaitRounds(t, a, 3, 20*time.Second)
	expectOpen(t, w)
	// A notification about the key's organization rechecks it at once and
	// finds it still valid.
	if err := keystore.SetOrgStatus(context.Background(), pool, "acme", keystore.OrgActive); err != nil {
		t.Fatal(err)
	}
	awaitRounds(t, a, 2, 20*time.Second)
	expectOpen(t, w)
}

// TestWatchFallbackWithoutListener: with the LISTEN connection down (its
// route to PostgreSQL cut) and the store reachable, a revoke still fires the
// watch through the fallback interval.
func TestWatchFallbackWithoutListener(t *testing.T) {
	dsn, pool := migratedDB(t)
	proxy, viaProxy := proxiedDSN(t, dsn)
	proxy.Cut()
	a := provisionWatchApp(t, viaProxy, 200*time.Millisecond) // LISTEN goes through the cut proxy
	a.store = pgStore{pool}                                   // lookups do not
	startApp(t, a)
	k := issue(t, pool, "acme", "free", "live")
	w := watchKey(t, a, k.Key)
	if _, err := keystore.Revoke(context.Background(), pool, k.ID); err != nil {
		t.Fatal(err)
	}
	awaitFired(t, w, contract.MsgKeyRevoked, 20*time.Second)
}

// TestWatchStoreDownKeepsWatchOpen: while the store cannot be reached the
// watch stays open (a failure is not a revocation); once it is back, a
// revoke fires it.
func TestWatchStoreDownKeepsWatchOpen(t *testing.T) {
	dsn, pool := migratedDB(t)
	proxy, viaProxy := proxiedDSN(t, dsn)
	a := provisionWatchApp(t, viaProxy, 100*time.Millisecond)
	startApp(t, a)
	k := issue(t, pool, "acme", "free", "live")
	w := watchKey(t, a, k.Key)
	proxy.Cut()
	awaitRounds(t, a, 3, 20*time.Second)
	expectOpen(t, w)
	proxy.Restore()
	if _, err := keystore.Revoke(context.Background(), pool, k.ID); err != nil {
		t.Fatal(err)
	}
	awaitFired(t, w, contract.MsgKeyRevoked, 20*time.Second)
}

// TestWatchStop: Stop closes Done with no Reason and unregisters the watch;
// App.Stop ends the workers and leaves open watches unfired.
func TestWatchStop(t *testing.T) {
	dsn, pool := migratedDB(t)
	a := provisionWatchApp(t, dsn, 50*time.Millisecond)
	startApp(t, a)
	k := issue(t, pool, "acme", "free", "live")
	w := watchKey(t, a, k.Key)
	kept := watchKey(t, a, k.Key)
	if n, _ := a.watches.size(); n != 2 {
		t.Fatalf("%d watches registered, want 2", n)
	}
	w.Stop()
	w.Stop() // twice is fine
	select {
	case <-w.Done():
	default:
		t.Fatal("Done not closed by Stop")
	}
	if r := w.Reason(); r != "" {
		t.Fatalf("Reason after Stop %q", r)
	}
	if n, keys := a.watches.size(); n != 1 || keys != 1 {
		t.Fatalf("after Stop: %d watches of %d keys, want 1 of 1", n, keys)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("App.Stop did not return")
	}
	<-a.done // both workers ended
	expectOpen(t, kept)
	kept.Stop()
	if n, keys := a.watches.size(); n != 0 || keys != 0 {
		t.Fatalf("after every Stop: %d watches of %d keys", n, keys)
	}
}

// proxiedDSN returns a proxy in front of dsn's server and dsn pointed at it.
func proxiedDSN(t *testing.T, dsn string) (*testenv.Proxy, string) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	proxy := testenv.NewProxy(t, target)
	viaProxy := strings.Replace(dsn, target, proxy.Addr(), 1)
	if viaProxy == dsn {
		t.Fatal("could not point the DSN at the proxy")
	}
	return proxy, viaProxy
}
