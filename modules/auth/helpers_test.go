package auth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
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
	base          string
	logPath       string // Caddy's own logs (DEBUG), and the access log unless accessLogPath differs
	accessLogPath string
	upstream      *recorder
}

// startGateway runs the gateway in-process (caddytest) with its key store at
// storeDSN.
func startGateway(t *testing.T, storeDSN, cacheTTL string) *gateway {
	t.Helper()
	return startGatewayWith(t, gatewayConfig{storeDSN: storeDSN, cacheTTL: cacheTTL})
}

// gatewayConfig is what tests vary in the gateway's Caddyfile.
type gatewayConfig struct {
	storeDSN, cacheTTL string
	authOptions        string // extra lines in the civic_auth global option
	globalOptions      string // extra global options
	separateAccessLog  bool   // access log in its own file
	routes             string // more routes in the site
}

func startGatewayWith(t *testing.T, c gatewayConfig) *gateway {
	t.Helper()
	storeDSN, cacheTTL := c.storeDSN, c.cacheTTL
	t.Setenv("CIVIC_AUTH_TEST_DSN", storeDSN)
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	port := testenv.FreePort(t)
	g := &gateway{
		base:     fmt.Sprintf("http://localhost:%d", port),
		logPath:  filepath.Join(t.TempDir(), "caddy.log"),
		upstream: newRecorder(t),
	}
	g.accessLogPath = g.logPath
	if c.separateAccessLog {
		g.accessLogPath = filepath.Join(t.TempDir(), "access.log")
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
		tier enterprise 1000/m 100000/d cost 500000/h bills members changes
		%[7]s
	}
	%[8]s
}
http://localhost:%[2]d {
	log {
		output file %[9]s
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
		respond "{civic.key_id}|{civic.org}|{civic.tier}|{civic.env}|{civic.rate}|{civic.families}|{civic.cost_budget}"
	}
	%[10]s
}
`, adminPort, port, testenv.FreePort(t), g.logPath, g.upstream.srv.URL, cacheTTL, c.authOptions, c.globalOptions, g.accessLogPath, c.routes)
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

// notifyWithin bounds the wait for a key change that reaches a gateway by
// LISTEN/NOTIFY (docs/design.md D8: about 25 ms, bound by the TTL). The tests
// using it cache the key, or recheck its watch, only once a minute, so a
// change seen within half of that can only have come from the notification —
// the property they check. The 2 s docs/api.md promises is logged, not
// asserted: a loaded machine delays the test's own requests past it.
const notifyWithin = 30 * time.Second

// awaitBody polls url with key until it answers want, failing after within,
// and returns how long that took.
func awaitBody(t *testing.T, url, key, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	testenv.Eventually(t, within, url+" to answer "+want, func() error {
		got := get(t, url, "Authorization", "Bearer "+key)
		if got.body != want {
			return fmt.Errorf("it answers %d %q", got.status, got.body)
		}
		return nil
	})
	return time.Since(start)
}
