package ratelimit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// adminPort is this package's caddytest admin port (common rules).
const adminPort = 2992

type gateway struct {
	tester *caddytest.Tester
	base   string
	port   int
}

// caddyfile renders a config whose global civic_rate_limit block is global
// ("" = none) and whose site is routes.
func renderConfig(port int, global, routes string) string {
	g := ""
	if global != "" {
		g = "civic_rate_limit {\n" + global + "\n}"
	}
	return fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%d
	http_port %d
	grace_period 1ns
	auto_https off
	%s
}
http://localhost:%d {
%s
}
`, adminPort, port, g, port, routes)
}

func startGateway(t *testing.T, global, routes string) *gateway {
	t.Helper()
	port := testenv.FreePort(t)
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	tester.InitServer(renderConfig(port, global, routes), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return &gateway{tester: tester, base: fmt.Sprintf("http://localhost:%d", port), port: port}
}

func (g *gateway) reload(t *testing.T, global, routes string) {
	t.Helper()
	g.tester.InitServer(renderConfig(g.port, global, routes), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	// A kept-alive connection may still reach the old server for an instant;
	// requests after a reload go over new connections to the new config.
	g.tester.Client.CloseIdleConnections()
}

type reply struct {
	status                    int
	body                      string
	policy, limit, retryAfter string
	ctype                     string
}

func (g *gateway) get(t *testing.T, path, key, tier string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Key", key)
	req.Header.Set("X-Tier", tier)
	resp, err := g.tester.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(body), resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"),
		resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type")}
}

func redisGlobal(url, prefix, extra string) string {
	return fmt.Sprintf("redis %s\nkey_prefix %s\nbreaker_cooldown 100ms\n%s", url, prefix, extra)
}

func limitRoute(rate string) string {
	return fmt.Sprintf(`route /a {
	civic_rate_limit {
		key {http.request.header.X-Key}
		rate %s
		policy {http.request.header.X-Tier}
	}
	respond "ok" 200
}`, rate)
}

// wantRefused checks a refusal's exact body and headers, with a Retry-After
// (and RateLimit t=) between lo and hi seconds: retryRange gives the values
// the client's clock allows.
func wantRefused(t *testing.T, r reply, policy, quotaHdr string, lo, hi int) {
	t.Helper()
	retry, err := strconv.Atoi(r.retryAfter)
	if err != nil || retry < lo || retry > hi {
		t.Fatalf("refusal: Retry-After %q, want %d..%d: %+v", r.retryAfter, lo, hi, r)
	}
	want := reply{429, `{"error":"Rate limit exceeded"}`, quotaHdr, fmt.Sprintf(`"%s";r=0;t=%d`, policy, retry), fmt.Sprint(retry), "application/json"}
	if r != want {
		t.Fatalf("refusal:\n got %+v\nwant %+v", r, want)
	}
}

// retryRange is the Retry-After a refusal can carry (whole seconds, rounded
// up, as the handler sends it) when the server decided at a moment in
// [sent, got] — the client's clock just before the request and just after
// its answer — and the quota is whole again at a moment in [wholeFrom,
// wholeBy]. A test asserting it cannot fail on a loaded machine: a slow
// request widens the range instead. On a quiet machine the range is one
// value; the exact arithmetic is TestWindowBurstThenRetryAfter's, on a fake
// clock.
func retryRange(wholeFrom, wholeBy, sent, got time.Time) (lo, hi int) {
	ceil := func(d time.Duration) int { return max(1, int((d+time.Second-1)/time.Second)) }
	return ceil(wholeFrom.Sub(got)), ceil(wholeBy.Sub(sent))
}

// TestQuotaThen429 (Redis): exactly the quota passes with exact headers, then
// 429 with the exact body and headers; keys and tiers are isolated.
func TestQuotaThen429(t *testing.T) {
	_, prefix := testenv.Redis(t)
	g := startGateway(t, redisGlobal("redis://"+testenv.RedisAddr(), prefix, ""), limitRoute("5/m"))
	const pol = `"gold";q=5;w=60`
	var first, firstAnswered time.Time // the first request was admitted between the two
	for i := 1; i <= 5; i++ {
		if i == 1 {
			first = time.Now()
		}
		r := g.get(t, "/a", "k1", "gold")
		if i == 1 {
			firstAnswered = time.Now()
		}
		// t: until the quota is whole again, when this request leaves the window
		want := reply{200, "ok", pol, fmt.Sprintf(`"gold";r=%d;t=60`, 5-i), "", r.ctype}
		if r != want {
			t.Fatalf("request %d:\n got %+v\nwant %+v", i, r, want)
		}
	}
	// Retry-After: when the first request leaves the window, 60 s after it
	// (less what has elapsed since, rounded up); denied requests are not
	// counted, so the second refusal counts down to the same moment.
	for range 2 {
		sent := time.Now()
		r := g.get(t, "/a", "k1", "gold")
		lo, hi := retryRange(first.Add(time.Minute), firstAnswered.Add(time.Minute), sent, time.Now())
		wantRefused(t, r, "gold", pol, lo, hi)
	}
	if r := g.get(t, "/a", "k2", "gold"); r.status != 200 || r.limit != `"gold";r=4;t=60` {
		t.Fatalf("other key not isolated: %+v", r)
	}
	if r := g.get(t, "/a", "k1", "silver"); r.status != 200 || r.limit != `"silver";r=4;t=60` {
		t.Fatalf("other tier not isolated: %+v", r)
	}
	if r := g.get(t, "/a", "k1", ""); r.status != 200 || r.policy != `"default";q=5;w=60` {
		t.Fatalf("empty policy: %+v", r)
	}
}

// TestRetryAfterHonoured: sooner than Retry-After is refused, at Retry-After
// it is allowed. Each step asserts what the client's clock proves about when
// the server decided (retryRange): a request sent at half the Retry-After and
// answered after the quota could be whole again proves nothing, and the
// scenario is run again with a fresh key (the machine was stalled for most
// of a second).
func TestRetryAfterHonoured(t *testing.T) {
	_, prefix := testenv.Redis(t)
	g := startGateway(t, redisGlobal("redis://"+testenv.RedisAddr(), prefix, ""), limitRoute("1/2s"))
	const window = 2 * time.Second
	for attempt := 1; ; attempt++ {
		key := fmt.Sprintf("k%d", attempt)
		first := time.Now()
		if r := g.get(t, "/a", key, "t"); r.status != 200 {
			t.Fatalf("first: %+v", r)
		}
		answered := time.Now() // the first request was admitted in [first, answered]
		// refused reports whether a request sent now is refused, or false
		// when it was answered too late to prove anything.
		refused := func(step string) bool {
			sent := time.Now()
			r := g.get(t, "/a", key, "t")
			got := time.Now()
			if !got.Before(first.Add(window)) {
				if attempt == 5 {
					t.Fatalf("%s: 5 attempts each stalled past the window", step)
				}
				t.Logf("attempt %d, %s: answered after the window; again with a fresh key", attempt, step)
				return false
			}
			lo, hi := retryRange(first.Add(window), answered.Add(window), sent, got)
			wantRefused(t, r, "t", `"t";q=1;w=2`, lo, hi)
			return true
		}
		if !refused("at once") {
			continue
		}
		time.Sleep(time.Until(first.Add(window / 2))) // half the Retry-After
		if !refused("at half the Retry-After") {
			continue
		}

		time.Sleep(time.Until(answered.Add(window))) // waiting Retry-After is the behaviour under test
		if r := g.get(t, "/a", key, "t"); r.status != 200 {
			t.Fatalf("after Retry-After: %+v", r)
		}
		return
	}
}

// TestMisconfiguredKeyOrRate: an empty key or a rate that does not parse is a
// 500, never unlimited.
func TestMisconfiguredKeyOrRate(t *testing.T) {
	g := startGateway(t, "", `route /a {
	civic_rate_limit {
		key {http.request.header.X-Key}
		rate {http.request.header.X-Tier}
	}
	respond "ok" 200
}`)
	internal := reply{500, `{"error":"Internal Server Error"}`, "", "", "", "application/json"}
	if r := g.get(t, "/a", "", "3/m"); r != internal {
		t.Fatalf("empty key: %+v", r)
	}
	r := g.get(t, "/a", "k", "lots")
	r.policy = ""
	if r != internal {
		t.Fatalf("bad rate: %+v", r)
	}
	// the memory store (no global option) limits with the rate it is given
	for range 3 {
		if r := g.get(t, "/a", "k", "3/m"); r.status != 200 {
			t.Fatalf("memory store: %+v", r)
		}
	}
	if r := g.get(t, "/a", "k", "3/m"); r.status != 429 || r.policy != `"default";q=3;w=60` {
		t.Fatalf("memory store did not limit: %+v", r)
	}
}

// TestRedisCutLocalMode: with Redis gone the gateway keeps limiting in
// memory (no 5xx), starting from what Redis last reported for the key
// (docs/design.md D63), and returns to the shared Redis count when it is
// back.
func TestRedisCutLocalMode(t *testing.T) {
	client, prefix := testenv.Redis(t)
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	g := startGateway(t, redisGlobal("redis://"+proxy.Addr(), prefix, "on_store_error local"), limitRoute("5/m"))
	storeErrors := func() float64 { return g.scrape(t, "civicgate_ratelimit_store_errors_total") }
	// Two requests counted in Redis before the cut. A Redis call that outlasts the 50 ms store timeout (a
	// loaded machine) is decided, and counted, in memory instead, which would leave the cut fewer than five;
	// such an attempt is made again with a key of its own.
	key, attempt := "", 0
	testenv.Eventually(t, 20*time.Second, "two requests counted in Redis before the cut", func() error {
		key = fmt.Sprintf("k%d", attempt)
		attempt++
		e0 := storeErrors()
		for i := 0; i < 2; i++ {
			if r := g.get(t, "/a", key, "t"); r.status != 200 {
				t.Fatalf("before cut: %+v", r)
			}
		}
		if d := storeErrors() - e0; d != 0 {
			return fmt.Errorf("%v Redis calls failed", d)
		}
		return nil
	})
	proxy.Cut()
	for i := 0; i < 3; i++ { // the 3 Redis last reported remaining, not a fresh quota
		if r := g.get(t, "/a", key, "t"); r.status != 200 {
			t.Fatalf("cut, request %d: %+v", i, r)
		}
	}
	if r := g.get(t, "/a", key, "t"); r.status != 429 || r.retryAfter == "" {
		t.Fatalf("cut: limit not enforced: %+v", r)
	}
	proxy.Restore()
	ctx := context.Background()
	probes := 0 // every probe uses a key of its own
	testenv.Eventually(t, 20*time.Second, "the breaker's probe to go back to Redis", func() error {
		probe := fmt.Sprintf("probe%d", probes)
		probes++
		g.get(t, "/a", probe, "t")
		n, err := client.Exists(ctx, prefix+"{"+probe+"}:t:5/60000").Result()
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%s counted in memory, not in Redis", probe)
		}
		return nil
	})
	// Redis still holds the 2 counted before the cut; memory, with the other 3 spent, would refuse. An attempt whose
	// Redis call failed was decided in memory (refused) and may still have been counted by Redis, so each one
	// lowers the smallest remaining accepted.
	failed := 0
	testenv.Eventually(t, 20*time.Second, "shared counting again", func() error {
		e0 := storeErrors()
		r := g.get(t, "/a", key, "t")
		if d := storeErrors() - e0; d != 0 {
			failed++
			return fmt.Errorf("a Redis call failed: %+v", r)
		}
		for remaining := 2; remaining >= max(0, 2-failed); remaining-- {
			if r.status == 200 && strings.HasPrefix(r.limit, fmt.Sprintf(`"t";r=%d;`, remaining)) {
				return nil
			}
		}
		t.Fatalf("not back to shared counting: %+v", r)
		return nil
	})
}

// TestStoreErrorOpenAndClosed: open admits with RateLimit-Policy only,
// closed answers 500 (docs/api.md "Errors": the rate-limit store down in closed mode).
func TestStoreErrorOpenAndClosed(t *testing.T) {
	_, prefix := testenv.Redis(t)
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	proxy.Cut()
	g := startGateway(t, redisGlobal("redis://"+proxy.Addr(), prefix, "on_store_error open"), limitRoute("1/m"))
	for range 3 {
		if r := g.get(t, "/a", "k", "t"); r.status != 200 || r.policy != `"t";q=1;w=60` || r.limit != "" {
			t.Fatalf("open: %+v", r)
		}
	}
	g.reload(t, redisGlobal("redis://"+proxy.Addr(), prefix, "on_store_error closed"), limitRoute("1/m"))
	for range 3 {
		r := g.get(t, "/a", "k", "t")
		if r.status != 500 || r.body != `{"error":"Internal Server Error"}` || r.ctype != "application/json" {
			t.Fatalf("closed: %+v", r)
		}
	}
	proxy.Restore()
	testenv.Eventually(t, 20*time.Second, "closed mode to recover", func() error {
		if r := g.get(t, "/a", "k", "t"); r.status != 200 {
			return fmt.Errorf("it answers %+v", r)
		}
		return nil
	})
	if r := g.get(t, "/a", "k", "t"); r.status != 429 {
		t.Fatalf("recovered but not limiting: %+v", r)
	}
}

// TestReloadChangesRate: a rate changed by `caddy reload` takes effect, and
// the store's state survives reloads.
func TestReloadChangesRate(t *testing.T) {
	_, prefix := testenv.Redis(t)
	global := redisGlobal("redis://"+testenv.RedisAddr(), prefix, "")
	g := startGateway(t, global, limitRoute("2/m"))
	for i := 0; i < 2; i++ {
		if r := g.get(t, "/a", "k", "t"); r.status != 200 {
			t.Fatalf("2/m request %d: %+v", i, r)
		}
	}
	if r := g.get(t, "/a", "k", "t"); r.status != 429 {
		t.Fatalf("2/m: %+v", r)
	}
	g.reload(t, global, limitRoute("4/m"))
	for i := 0; i < 4; i++ {
		if r := g.get(t, "/a", "k", "t"); r.status != 200 || r.policy != `"t";q=4;w=60` {
			t.Fatalf("4/m request %d: %+v", i, r)
		}
	}
	if r := g.get(t, "/a", "k", "t"); r.status != 429 {
		t.Fatalf("4/m: %+v", r)
	}
	// the memory store also survives a reload (caddy.UsagePool)
	g.reload(t, "", limitRoute("1/m"))
	if r := g.get(t, "/a", "m", "t"); r.status != 200 {
		t.Fatalf("memory: %+v", r)
	}
	g.reload(t, "", limitRoute("1/m")+"\nroute /b {\n respond b\n}")
	if r := g.get(t, "/a", "m", "t"); r.status != 429 {
		t.Fatalf("memory state lost on reload: %+v", r)
	}
}

// TestMetrics: decisions, Redis calls and store errors are exported through
// Caddy's registry (admin /metrics), with no key in any label.
func TestMetrics(t *testing.T) {
	_, prefix := testenv.Redis(t)
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	g := startGateway(t, redisGlobal("redis://"+proxy.Addr(), prefix, ""), limitRoute("1/m"))
	metric := func(name string) float64 {
		t.Helper()
		return g.scrape(t, name)
	}
	// A Redis call that outlasts the 50 ms store timeout (a loaded machine) is a store error and another
	// decision; such an attempt is made again, with a key of its own, from new baselines.
	var allowed0, refused0, calls0, errors0 float64
	attempt := 0
	testenv.Eventually(t, 20*time.Second, "three requests decided with Redis", func() error {
		key := fmt.Sprintf("secret-key-id-%d", attempt)
		attempt++
		allowed0 = metric(`civicgate_ratelimit_decisions_total{outcome="allowed"}`)
		refused0 = metric(`civicgate_ratelimit_decisions_total{outcome="refused"}`)
		calls0 = metric("civicgate_ratelimit_redis_calls_total")
		errors0 = metric("civicgate_ratelimit_store_errors_total")
		g.get(t, "/a", key, "t")
		g.get(t, "/a", key, "t")
		g.get(t, "/a", key, "t") // from the refusal cache
		if d := metric("civicgate_ratelimit_store_errors_total") - errors0; d != 0 {
			return fmt.Errorf("%v Redis calls failed", d)
		}
		return nil
	})
	proxy.Cut()
	g.get(t, "/a", "other", "t")
	if d := metric(`civicgate_ratelimit_decisions_total{outcome="allowed"}`) - allowed0; d != 2 {
		t.Errorf("allowed +%v, want 2", d)
	}
	if d := metric(`civicgate_ratelimit_decisions_total{outcome="refused"}`) - refused0; d != 2 {
		t.Errorf("refused +%v, want 2", d)
	}
	if d := metric("civicgate_ratelimit_redis_calls_total") - calls0; d != 3 {
		t.Errorf("redis calls +%v, want 3", d)
	}
	if d := metric("civicgate_ratelimit_store_errors_total") - errors0; d != 1 {
		t.Errorf("store errors +%v, want 1", d)
	}
}

// TestStandaloneRemoteHost: without civic_auth or the global option, the
// handler limits on the client address with the in-memory store.
func TestStandaloneRemoteHost(t *testing.T) {
	g := startGateway(t, "", `civic_rate_limit {
	key {remote_host}
	rate 3/h
	policy anonymous
}
respond "ok" 200`)
	first := time.Now()
	var answered time.Time // the first request was admitted in [first, answered]
	for i := 1; i <= 3; i++ {
		if r := g.get(t, "/", "", ""); r.status != 200 || r.limit != fmt.Sprintf(`"anonymous";r=%d;t=3600`, 3-i) {
			t.Fatalf("request %d: %+v", i, r)
		}
		if i == 1 {
			answered = time.Now()
		}
	}
	sent := time.Now()
	r := g.get(t, "/", "", "")
	lo, hi := retryRange(first.Add(time.Hour), answered.Add(time.Hour), sent, time.Now())
	wantRefused(t, r, "anonymous", `"anonymous";q=3;w=3600`, lo, hi)
}

// TestReloadReadsSecretsFromFile: a reload that adds the Redis store reads
// its URL from a {file.…} placeholder — resolved by the running process on
// every provision, like {env.…}, but from a file the operator can write
// without restarting (the process's environment is fixed at its start), and
// never written into the adapted JSON or autosave.json. Switching from the
// memory store to Redis starts every key's count afresh (docs/operations.md
// "Environment variables").
func TestReloadReadsSecretsFromFile(t *testing.T) {
	client, prefix := testenv.Redis(t)
	g := startGateway(t, "", limitRoute("3/m"))
	for range 3 {
		if r := g.get(t, "/a", "k", "t"); r.status != 200 {
			t.Fatalf("memory store: %+v", r)
		}
	}
	if r := g.get(t, "/a", "k", "t"); r.status != 429 {
		t.Fatalf("memory store over quota: %+v", r)
	}
	secret := filepath.Join(t.TempDir(), "redis_url")
	if err := os.WriteFile(secret, []byte("redis://"+testenv.RedisAddr()+"/0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.reload(t, redisGlobal("{file."+secret+"}", prefix, ""), limitRoute("3/m"))
	if r := g.get(t, "/a", "k", "t"); r.status != 200 || r.limit != `"t";r=2;t=60` {
		t.Fatalf("after switching to Redis: %+v (the count starts afresh)", r)
	}
	n, err := client.Exists(context.Background(), prefix+"{k}:t:3/60000").Result()
	if err != nil || n != 1 {
		t.Fatalf("the request was not counted in Redis: %d %v", n, err)
	}
}
