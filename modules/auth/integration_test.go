package auth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testenv"
	"github.com/civicgate/civicgate/modules/auth/identity"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

const (
	adminPort  = 2991
	testSecret = "integration-secret-0123456789abcdef0123"
)

// recorder is an upstream that remembers every request it saw, in full.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
	srv  *httptest.Server
}

type recorded struct {
	header http.Header
	dump   string
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.URL.String())
		_ = r.Header.Write(&b)
		b.Write(body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{header: r.Header.Clone(), dump: b.String()})
		rec.mu.Unlock()
		_, _ = io.WriteString(w, "upstream ok")
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) last(t *testing.T) recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("upstream saw no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

func (rec *recorder) all() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var b strings.Builder
	for _, r := range rec.reqs {
		b.WriteString(r.dump)
	}
	return b.String()
}

type gateway struct {
	base     string
	logPath  string
	upstream *recorder
}

// startGateway runs the gateway in-process (caddytest) with its key store at
// storeDSN.
func startGateway(t *testing.T, storeDSN, cacheTTL string) *gateway {
	t.Helper()
	t.Setenv("CIVIC_AUTH_TEST_DSN", storeDSN)
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	port := testenv.FreePort(t)
	g := &gateway{
		base:     fmt.Sprintf("http://localhost:%d", port),
		logPath:  filepath.Join(t.TempDir(), "caddy.log"),
		upstream: newRecorder(t),
	}
	cfg := fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	log {
		output file %[4]s
		level DEBUG
	}
	civic_auth {
		keys postgres {env.CIVIC_AUTH_TEST_DSN}
		environment live
		identity_secret {env.CIVIC_AUTH_TEST_SECRET}
		identity_ttl 30s
		cache_ttl %[6]s
		negative_cache_ttl 200ms
		lookup_timeout 1s
		tier free 30/m bills members
		tier enterprise 1000/m bills members changes
	}
}
http://localhost:%[2]d {
	log {
		output file %[4]s
	}
	route /bills* {
		civic_auth {
			require_family bills
		}
		reverse_proxy %[5]s
	}
	route /changes* {
		civic_auth {
			require_family changes
		}
		reverse_proxy %[5]s
	}
	route /echo {
		civic_auth
		respond "{civic.key_id}|{civic.org}|{civic.tier}|{civic.env}|{civic.rate}|{civic.families}"
	}
}
`, adminPort, port, testenv.FreePort(t), g.logPath, g.upstream.srv.URL, cacheTTL)
	caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")
	return g
}

func migratedDB(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := testenv.Postgres(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := keystore.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return dsn, pool
}

func issue(t *testing.T, pool *pgxpool.Pool, org, tier, env string) keystore.Issued {
	t.Helper()
	iss, err := keystore.Issue(context.Background(), pool, org, tier, env)
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

type response struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, url string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, string(body)}
}

// httpGetQuiet is a GET for polling loops and goroutines (no testing.T).
func httpGetQuiet(url string, header ...string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return string(body), err
}

func expectRefusal(t *testing.T, got response, status int, body string) {
	t.Helper()
	if got.status != status || got.body != body {
		t.Fatalf("got %d %q, want %d %q", got.status, got.body, status, body)
	}
	if ct := got.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	wa := got.header.Values("Www-Authenticate")
	if status == http.StatusUnauthorized && (len(wa) != 1 || wa[0] != `Bearer realm="civicgate"`) {
		t.Fatalf("WWW-Authenticate %q", wa)
	}
	if status != http.StatusUnauthorized && len(wa) != 0 {
		t.Fatalf("unexpected WWW-Authenticate %q on %d", wa, status)
	}
}

// awaitBody polls url until it answers want, failing after within.
func awaitBody(t *testing.T, url, key, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := get(t, url, "Authorization", "Bearer "+key)
		if got.body == want {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s still answers %d %q after %s, want %q", url, got.status, got.body, within, want)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a wait-and-hope
	}
}

func TestRefusals(t *testing.T) {
	dsn, pool := migratedDB(t)
	g := startGateway(t, dsn, "1s")
	ctx := context.Background()

	ent := issue(t, pool, "ent", "enterprise", "live")
	free := issue(t, pool, "freeorg", "free", "live")
	testKey := issue(t, pool, "ent", "enterprise", "test")
	revoked := issue(t, pool, "rev", "enterprise", "live")
	if err := keystore.Revoke(ctx, pool, revoked.ID); err != nil {
		t.Fatal(err)
	}
	rotatedOut := issue(t, pool, "rot", "enterprise", "live")
	if _, err := keystore.Rotate(ctx, pool, "rot", "", "live"); err != nil {
		t.Fatal(err)
	}
	suspended := issue(t, pool, "susp", "enterprise", "live")
	if err := keystore.SetOrgStatus(ctx, pool, "susp", keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	gold := issue(t, pool, "goldorg", "gold", "live") // a tier the config does not define
	unknown, err := keystore.NewKey("live")
	if err != nil {
		t.Fatal(err)
	}

	bills := g.base + "/bills"
	for _, c := range []struct {
		name   string
		url    string
		header []string
		status int
		body   string
	}{
		{"missing", bills, nil, 401, `{"error":"Missing bearer token"}`},
		{"basic scheme", bills, []string{"Authorization", "Basic " + ent.Key}, 401, `{"error":"Malformed authorization header"}`},
		{"empty bearer", bills, []string{"Authorization", "Bearer "}, 401, `{"error":"Malformed authorization header"}`},
		{"garbage", bills, []string{"Authorization", "Bearer not a key"}, 401, `{"error":"Malformed authorization header"}`},
		{"empty header", bills, []string{"Authorization", ""}, 401, `{"error":"Malformed authorization header"}`},
		{"two headers", bills, []string{"Authorization", "Bearer " + ent.Key, "Authorization", "Bearer " + ent.Key}, 401, `{"error":"Malformed authorization header"}`},
		{"token in query only", bills + "?access_token=" + ent.Key, nil, 401, `{"error":"Missing bearer token"}`},
		{"unknown", bills, []string{"Authorization", "Bearer " + unknown}, 401, `{"error":"Invalid API key"}`},
		{"revoked", bills, []string{"Authorization", "Bearer " + revoked.Key}, 401, `{"error":"API key revoked"}`},
		{"rotated out", bills, []string{"Authorization", "Bearer " + rotatedOut.Key}, 401, `{"error":"API key rotated out"}`},
		{"other environment", bills, []string{"Authorization", "Bearer " + testKey.Key}, 401, `{"error":"API key not valid in this environment"}`},
		{"suspended", bills, []string{"Authorization", "Bearer " + suspended.Key}, 403, `{"error":"Organization suspended"}`},
		{"tier not entitled", g.base + "/changes", []string{"Authorization", "Bearer " + free.Key}, 403, `{"error":"Tier not entitled to this endpoint family"}`},
		{"unknown tier", bills, []string{"Authorization", "Bearer " + gold.Key}, 403, `{"error":"Tier not entitled to this endpoint family"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectRefusal(t, get(t, c.url, c.header...), c.status, c.body)
		})
	}
	if all := g.upstream.all(); all != "" {
		t.Fatalf("refused requests reached the upstream:\n%s", all)
	}

	t.Run("allowed", func(t *testing.T) {
		for _, k := range []keystore.Issued{ent, free} {
			if got := get(t, bills, "Authorization", "Bearer "+k.Key); got.status != 200 || got.body != "upstream ok" {
				t.Fatalf("%s: %d %q", k.ID, got.status, got.body)
			}
		}
		if got := get(t, g.base+"/changes", "Authorization", "bearer "+ent.Key); got.status != 200 {
			t.Fatalf("enterprise /changes: %d %q", got.status, got.body)
		}
	})
}

func TestPlaceholdersAndUpstreamHeaders(t *testing.T) {
	dsn, pool := migratedDB(t)
	g := startGateway(t, dsn, "1s")
	ent := issue(t, pool, "acme", "enterprise", "live")

	got := get(t, g.base+"/echo", "Authorization", "Bearer "+ent.Key)
	want := ent.ID + "|" + ent.OrgID + "|enterprise|live|1000/m|bills,members,changes"
	if got.status != 200 || got.body != want {
		t.Fatalf("placeholders: %d %q, want %q", got.status, got.body, want)
	}

	forged, err := identity.Sign([]byte(testSecret), identity.Caller{KeyID: "key_forged", Org: "evil", Tier: "enterprise", Env: "live"}, time.Now(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got = get(t, g.base+"/bills?q=x", "Authorization", "Bearer "+ent.Key,
		"X-Civic-Identity", forged, "X-Civic-Tier", "enterprise", "x-civic-org", "evil", "X-Other", "kept")
	if got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	up := g.upstream.last(t)
	if v := up.header.Values("Authorization"); len(v) != 0 {
		t.Fatalf("Authorization forwarded: %q", v)
	}
	for k := range up.header {
		if strings.HasPrefix(k, "X-Civic-") && k != identity.Header {
			t.Fatalf("client header %s forwarded", k)
		}
	}
	if up.header.Get("X-Other") != "kept" {
		t.Fatal("unrelated header dropped")
	}
	ids := up.header.Values(identity.Header)
	if len(ids) != 1 || ids[0] == forged {
		t.Fatalf("identity header %q", ids)
	}
	claims, err := identity.Verify([]byte(testSecret), ids[0], time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if claims.KeyID() != ent.ID || claims.Org != ent.OrgID || claims.Tier != "enterprise" || claims.Env != "live" {
		t.Fatalf("claims %+v", claims)
	}
	if ttl := time.Until(claims.ExpiresAt.Time); ttl <= 0 || ttl > 30*time.Second {
		t.Fatalf("assertion expires in %s", ttl)
	}

	// The token never reaches the upstream or the logs.
	if strings.Contains(g.upstream.all(), ent.Key) {
		t.Fatal("token reached the upstream")
	}
	logs, err := os.ReadFile(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "/bills") {
		t.Fatalf("log capture is not working (no access log line):\n%s", logs)
	}
	if strings.Contains(string(logs), ent.Key) || strings.Contains(string(logs), ent.Key[keystore.PrefixLen:]) {
		t.Fatal("token appears in the logs")
	}
}

func TestRevocationOnSameGateway(t *testing.T) {
	dsn, pool := migratedDB(t)
	// A long TTL: only LISTEN/NOTIFY can make revocation visible in time.
	g := startGateway(t, dsn, "1m")
	k := issue(t, pool, "acme", "enterprise", "live")
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+k.Key); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	ctx := context.Background()
	if err := keystore.SetOrgStatus(ctx, pool, "acme", keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", k.Key, `{"error":"Organization suspended"}`, 2*time.Second)
	if err := keystore.SetOrgStatus(ctx, pool, "acme", keystore.OrgActive); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", k.Key, "upstream ok", 2*time.Second)
	if err := keystore.Revoke(ctx, pool, k.ID); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", k.Key, `{"error":"API key revoked"}`, 2*time.Second)
}

func TestPostgresDown(t *testing.T) {
	dsn, pool := migratedDB(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port))
	host, port, _ := strings.Cut(proxy.Addr(), ":")
	viaProxy := strings.Replace(dsn, fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port), host+":"+port, 1)
	if viaProxy == dsn {
		t.Fatalf("could not point the DSN at the proxy")
	}
	const ttl = 200 * time.Millisecond
	g := startGateway(t, viaProxy, ttl.String())
	k := issue(t, pool, "acme", "enterprise", "live")
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+k.Key); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}

	proxy.Cut()
	// Past several TTLs, the cached key keeps working.
	start := time.Now()
	for time.Since(start) < 4*ttl {
		if got := get(t, g.base+"/bills", "Authorization", "Bearer "+k.Key); got.status != 200 {
			t.Fatalf("cached key with PostgreSQL down: %d %q", got.status, got.body)
		}
	}
	unknown, err := keystore.NewKey("live")
	if err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+unknown), 500, `{"error":"Internal Server Error"}`)
	other := issue(t, pool, "other", "free", "live") // exists, but the gateway cannot see the store
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+other.Key), 500, `{"error":"Internal Server Error"}`)

	proxy.Restore()
	awaitBody(t, g.base+"/bills", other.Key, "upstream ok", 5*time.Second)
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+unknown), 401, `{"error":"Invalid API key"}`)

	logs, err := os.ReadFile(g.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{k.Key, unknown, other.Key, cfg.ConnConfig.Password} {
		if secret != "" && strings.Contains(string(logs), secret) {
			t.Fatal("a secret appears in the logs")
		}
	}
}
