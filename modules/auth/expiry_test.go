package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

const bodyExpired = `{"error":"API key expired"}`

// movableClock is the real clock plus an offset the test moves: every App
// provisioned while it is installed (useClock) compares a key's deadlines
// with it, so a test reaches an expiry without sleeping.
type movableClock struct{ offset atomic.Int64 }

func (c *movableClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// set moves the clock to t, from where it goes on with real time.
func (c *movableClock) set(t time.Time) { c.offset.Store(int64(time.Until(t))) }

// useClock installs a movable clock for the Apps provisioned during t.
func useClock(t *testing.T) *movableClock {
	t.Helper()
	c := &movableClock{}
	f := c.now
	clockOverride.Store(&f)
	t.Cleanup(func() { clockOverride.Store(nil) })
	return c
}

// TestKeyExpiryGateway (through Caddy, PostgreSQL, an injected clock): a key
// issued with `keys issue --expires` is admitted until its expiry and
// answers 401 `{"error":"API key expired"}` (with the 401's
// WWW-Authenticate) from the instant it comes — from the record cached
// before it: the expiry is then removed from the database behind the
// gateway's back (no notification), and the cached record (cache TTL one
// hour) still refuses the key. Another organization's key without an
// expiry is unaffected.
func TestKeyExpiryGateway(t *testing.T) {
	clock := useClock(t)
	dsn, pool := migratedDB(t)
	g := startGateway(t, dsn, "1h")
	echo := g.base + "/echo"

	keysCLI(t, dsn, "issue", "--org", "acme", "--tier", "free", "--env", "live", "--expires", "90s", "--name", "nightly export", "--label", "team=data")
	list, err := keystore.List(context.Background(), pool, keystore.ListFilter{Org: "acme"})
	if err != nil || len(list) != 1 || list[0].ExpiresAt == nil {
		t.Fatalf("issued key: %+v %v", list, err)
	}
	// The CLI prints the key once; the test takes a key it can send from
	// IssueWith, with the same lifecycle, for a second organization.
	expires := *list[0].ExpiresAt
	k, err := keystore.IssueWith(context.Background(), pool, keystore.IssueSpec{Org: "beta", Tier: "free", Env: "live",
		Lifecycle: keystore.Lifecycle{ExpiresAt: expires, Name: "nightly export", Labels: map[string]string{"team": "data"}}})
	if err != nil {
		t.Fatal(err)
	}
	other := issue(t, pool, "gamma", "free", "live")
	bearer := func(key string) []string { return []string{"Authorization", "Bearer " + key} }

	if got := get(t, echo, bearer(k.Key)...); got.status != 200 || !strings.HasPrefix(got.body, k.ID) {
		t.Fatalf("before its expiry: %d %q", got.status, got.body)
	}
	// Cached now. The database forgets the expiry without telling anyone.
	if _, err := pool.Exec(context.Background(), `UPDATE civicgate.api_keys SET expires_at = NULL WHERE id = $1`, k.ID); err != nil {
		t.Fatal(err)
	}
	clock.set(expires.Add(-time.Second))
	if got := get(t, echo, bearer(k.Key)...); got.status != 200 {
		t.Fatalf("a second before its expiry: %d %q", got.status, got.body)
	}
	clock.set(expires) // the instant
	expectRefusal(t, get(t, echo, bearer(k.Key)...), http.StatusUnauthorized, bodyExpired)
	expectRefusal(t, get(t, g.base+"/bills", bearer(k.Key)...), http.StatusUnauthorized, bodyExpired)
	if got := get(t, echo, bearer(other.Key)...); got.status != 200 {
		t.Fatalf("a key without expiry: %d %q", got.status, got.body)
	}
	if seen := g.upstream.all(); seen != "" {
		t.Fatalf("the expired key's request reached the upstream:\n%s", seen)
	}
}

// TestExpiredKeyFromTheCache (no Caddy; a counting store): a key cached
// before its expiry is refused with the exact body at its expiry without
// another lookup — the refusal costs what a revoked key's does —, counted
// under outcome "expired", and logged like other refused known keys (key id,
// organization, reason; never the key, its hash, name or labels).
func TestExpiredKeyFromTheCache(t *testing.T) {
	key, err := keystore.NewKey("live")
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(30 * time.Minute) // within the unit app's cache TTL (1 h)
	rec := activeRecord
	rec.ExpiresAt, rec.Name, rec.Labels = expires, "<b>nightly</b>", map[string]string{"team": "da\u00adta"}
	st := &countingStore{store: indexStore(map[keystore.Hash]keystore.Record{keystore.HashKey(key): rec})}
	a, _ := unitApp(t, st, "off")
	a.challenge = challenge // as Provision sets it
	clock := &movableClock{}
	a.clock = clock.now
	core, logs := observer.New(zapcore.InfoLevel)
	h := &Handler{app: a, logger: zap.NewNop(), refusals: zap.New(core)}
	call := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/v1/graphql", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, r, nextFunc(func(w http.ResponseWriter, _ *http.Request) error {
			w.WriteHeader(http.StatusNoContent)
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if w := call(); w.Code != http.StatusNoContent {
		t.Fatalf("before its expiry: %d %q", w.Code, w.Body)
	}
	clock.set(expires)
	before := counterValue(t, a, outcomeExpired)
	w := call()
	if w.Code != http.StatusUnauthorized || w.Body.String() != bodyExpired || w.Header().Get("Www-Authenticate") == "" ||
		w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("at its expiry: %d %q %v", w.Code, w.Body, w.Header())
	}
	if n := st.n.Load(); n != 1 {
		t.Fatalf("%d store lookups, want 1: the expiry is enforced from the cached record", n)
	}
	if got := counterValue(t, a, outcomeExpired) - before; got != 1 {
		t.Fatalf("outcome expired counted %v times", got)
	}
	entries := logs.FilterMessage("API key refused").All()
	if len(entries) != 1 || entries[0].ContextMap()["reason"] != outcomeExpired || entries[0].ContextMap()["key_id"] != rec.KeyID {
		t.Fatalf("logged %+v", entries)
	}
	for _, f := range entries[0].Context {
		for _, secret := range []string{key, keystore.HashKey(key).String(), "nightly", "data"} {
			if strings.Contains(f.String, secret) {
				t.Fatalf("the log holds %q in %s", secret, f.Key)
			}
		}
	}
	// A watch of the key (an open WebSocket) ends with the same message.
	if got := a.invalidReason(rec); got != contract.MsgKeyExpired {
		t.Fatalf("the watch's reason at the expiry: %q", got)
	}
	clock.set(expires.Add(-time.Minute))
	if got := a.invalidReason(rec); got != "" {
		t.Fatalf("the watch's reason before the expiry: %q", got)
	}
}

// TestExpiryKeysFileGateway: a key issued into a keys file with --expires,
// --name and --label is admitted until its expiry and refused with the
// exact body from then on, by the keys-file store's cached record.
func TestExpiryKeysFileGateway(t *testing.T) {
	clock := useClock(t)
	path := filepath.Join(t.TempDir(), "keys.json")
	out := fileCLI(t, path, "issue", "--org", "acme", "--tier", "free", "--env", "live", "--expires", "2h", "--name", "ci", "--label", "env=ci")
	if !strings.Contains(out, "Expires: ") {
		t.Fatalf("issue printed %q", out)
	}
	var key string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "API key: "); ok {
			key = v
		}
	}
	a, _ := fileApp(t, path)
	h := &Handler{app: a, logger: zap.NewNop()}
	call := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/v1/graphql", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, r, nextFunc(func(w http.ResponseWriter, _ *http.Request) error {
			w.WriteHeader(http.StatusNoContent)
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if w := call(); w.Code != http.StatusNoContent {
		t.Fatalf("before its expiry: %d %q", w.Code, w.Body)
	}
	rec, err := a.store.lookup(context.Background(), keystore.HashKey(key))
	if err != nil || rec.Name != "ci" || rec.Labels["env"] != "ci" || rec.ExpiresAt.IsZero() {
		t.Fatalf("the keys file's record: %+v %v", rec, err)
	}
	clock.set(rec.ExpiresAt)
	if w := call(); w.Code != http.StatusUnauthorized || w.Body.String() != bodyExpired {
		t.Fatalf("after its expiry: %d %q", w.Code, w.Body)
	}
}

// TestExpiredRefusalCostsWhatRevokedDoes: refusing an expired cached key
// does the work refusing a revoked one does — no lookup, the same
// allocations — so its timing tells a client nothing more (docs/design.md
// D71).
func TestExpiredRefusalCostsWhatRevokedDoes(t *testing.T) {
	expiredKey, _ := keystore.NewKey("live")
	revokedKey, _ := keystore.NewKey("live")
	expired, revoked := activeRecord, activeRecord
	expired.KeyID, expired.ExpiresAt, expired.Name, expired.Labels = "key_exp", time.Now().Add(-time.Minute), "n", map[string]string{"a": "b"}
	revoked.KeyID, revoked.Status = "key_rev", keystore.StatusRevoked
	st := &countingStore{store: indexStore(map[keystore.Hash]keystore.Record{keystore.HashKey(expiredKey): expired, keystore.HashKey(revokedKey): revoked})}
	a, _ := unitApp(t, st, "off")
	a.challenge = challenge
	h := &Handler{app: a, logger: zap.NewNop()}
	r := httptest.NewRequest(http.MethodGet, "/v1/graphql", nil)
	w := &statusWriter{discardWriter: discardWriter{h: http.Header{}}}
	next := nextFunc(func(http.ResponseWriter, *http.Request) error { t.Fatal("admitted"); return nil })
	allocs := func(key string) float64 {
		auth := []string{"Bearer " + key}
		return testing.AllocsPerRun(200, func() {
			r.Header["Authorization"] = auth
			if err := h.ServeHTTP(w, r, next); err != nil || w.status != http.StatusUnauthorized {
				t.Fatalf("%d %v", w.status, err)
			}
		})
	}
	exp, rev := allocs(expiredKey), allocs(revokedKey)
	if exp != rev {
		t.Errorf("an expired key's refusal allocates %v times, a revoked key's %v", exp, rev)
	}
	if n := st.n.Load(); n != 2 {
		t.Errorf("%d lookups for two keys refused 400 times", n)
	}
}
