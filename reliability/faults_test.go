package reliability

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// faultEnv is a stack wired for fault injection: a private redis-server it
// can kill and restart, and TCP proxies between the processes and
// PostgreSQL, and between the gateway and recordsd.
type faultEnv struct {
	*env
	redis    *testenv.RedisServer
	pg       *testenv.Proxy
	upstream *testenv.Proxy
	prefix   string
	calls    []call
}

// upstreamTimeout is the gateway's response_header_timeout in these tests.
const upstreamTimeout = time.Second

func startFaultEnv(t *testing.T) *faultEnv {
	f := &faultEnv{}
	f.env = start(t, 8, func(t *testing.T, s *stack.Stack) {
		f.redis = testenv.StartRedisServer(t)
		s.Setenv("REDIS_URL", f.redis.URL())
		f.prefix = s.Getenv("CIVICGATE_RL_PREFIX")

		u, err := url.Parse(s.DSN)
		if err != nil {
			t.Fatal(err)
		}
		f.pg = testenv.NewProxy(t, u.Host)
		u.Host = f.pg.Addr()
		s.Setenv("DATABASE_URL", u.String())

		f.upstream = testenv.NewProxy(t, s.Getenv("RECORDSD_LISTEN"))
		s.Setenv("CIVICGATE_UPSTREAM", f.upstream.Addr())
		s.Setenv("CIVICGATE_UPSTREAM_TIMEOUT", upstreamTimeout.String())
		// Faults of recordsd are what clients must see here: the response cache
		// (its own tests: e2e/cache_test.go) would answer repeated calls itself.
		s.Setenv("CIVICGATE_CACHE", "off")
		// Webhook receivers of these tests run on loopback.
		s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on")
		s.Setenv("CIVICGATE_WEBHOOKS_POLL", "100ms")
	})
	for _, k := range f.keys {
		f.calls = append(f.calls, validCalls(k)...)
	}
	return f
}

// TestFaults breaks one dependency at a time under load and checks what
// clients see during the fault and that the service recovers by itself.
func TestFaults(t *testing.T) {
	t.Parallel()
	f := startFaultEnv(t)
	cold, _ := f.s.IssueKey("coldco", "enterprise", "live") // never used before the PostgreSQL outage
	t.Run("RedisKilledAndRestarted", func(t *testing.T) { testRedisRestart(t, f) })
	t.Run("PostgresDownAndBack", func(t *testing.T) { testPostgresOutage(t, f, cold) })
	t.Run("UpstreamHung", func(t *testing.T) { testUpstreamHung(t, f) })
	t.Run("UpstreamSlow", func(t *testing.T) { testUpstreamSlow(t, f) })
	t.Run("UpstreamRefusing", func(t *testing.T) { testUpstreamRefusing(t, f) })
	t.Run("GatewayKilled", func(t *testing.T) { testGatewayKilled(t, f) })
	t.Run("Webhooks", func(t *testing.T) { testWebhookFaults(t, f) })
	f.s.CheckLogs(t, append(f.keys, f.free, cold)...)
}

// loadCtx bounds a fault's request loop.
func loadCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// hold waits until at least d passed and n more responses arrived.
func hold(t *testing.T, l *load, d time.Duration, n int) {
	t.Helper()
	until := time.Now().Add(d)
	target := l.count() + n
	stack.WaitFor(t, d+30*time.Second, fmt.Sprintf("%s and %d responses", d, n), func() error {
		if c := l.count(); c < target || time.Now().Before(until) {
			return fmt.Errorf("%d of %d responses", c, target)
		}
		return nil
	})
}

func testRedisRestart(t *testing.T, f *faultEnv) {
	l := hammer(loadCtx(t), f.s.Client, f.s.HTTPSURL, 4, 20*time.Millisecond, f.calls)
	hold(t, l, time.Second, 50)
	down := time.Now()
	f.redis.Kill()
	hold(t, l, 2*time.Second, 100)

	// The limiter still limits while Redis is away (on_store_error local):
	// the free tier's 30/min is enforced by this instance alone.
	freeCalls := []call{{name: "free GET /bills", method: "GET", path: "/bills?limit=1", key: f.free, want: map[int]string{200: ""}}}
	var free []result
	for range 40 {
		free = append(free, send(t.Context(), f.s.Client, f.s.HTTPSURL, &freeCalls[0]))
	}
	reportUnexpected(t, "free key while Redis is down", free, nil)
	if n := summary(free)[429]; n == 0 {
		t.Errorf("free tier not limited while Redis was down: %v", summary(free))
	}

	f.redis.Start()
	up := time.Now()
	// Shared limits resume: the limiter writes its state to Redis again.
	rdb := f.redis.Client()
	stack.WaitFor(t, 20*time.Second, "rate-limit keys back in Redis", func() error {
		keys, _, err := rdb.Scan(t.Context(), 0, f.prefix+"*", 100).Result()
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return fmt.Errorf("no key under %s yet", f.prefix)
		}
		return nil
	})
	hold(t, l, time.Second, 50)
	rs := l.stop()
	reportUnexpected(t, "Redis killed and restarted", rs, nil)
	t.Logf("Redis down %s: %d responses %v; during the outage %v", up.Sub(down).Round(time.Millisecond), len(rs), summary(rs), summary(between(rs, down, up)))
}

func testPostgresOutage(t *testing.T, f *faultEnv, cold string) {
	l := hammer(loadCtx(t), f.s.Client, f.s.HTTPSURL, 4, 20*time.Millisecond, f.calls)
	hold(t, l, time.Second, 50)
	f.pg.Cut()
	down := time.Now()
	hold(t, l, 3*time.Second, 100)

	// A key the gateway never saw cannot be checked: the opaque 500.
	coldCall := call{name: "cold key", method: "GET", path: "/bills?limit=1", key: cold}
	if r := send(t.Context(), f.s.Client, f.s.HTTPSURL, &coldCall); r.status != 500 || r.body != bodyInternal {
		t.Errorf("unknown key while PostgreSQL is down: %d %v %s, want 500 %s", r.status, r.err, r.body, bodyInternal)
	}
	health := call{name: "recordsd healthz", method: "GET", path: "/healthz"}
	if r := send(t.Context(), f.s.Client, "http://"+f.s.Getenv("RECORDSD_LISTEN"), &health); r.status != 503 || r.body != `{"error":"Database unavailable"}` {
		t.Errorf("recordsd /healthz while PostgreSQL is down: %d %s", r.status, r.body)
	}

	f.pg.Restore()
	up := time.Now()
	// Recovers without a restart: the next requests succeed again.
	var recovered time.Time
	stack.WaitFor(t, 20*time.Second, "a 200 after PostgreSQL is back", func() error {
		for _, r := range between(l.snapshot(), up, time.Now().Add(time.Hour)) {
			if r.status == 200 {
				recovered = r.at
				return nil
			}
		}
		return fmt.Errorf("no 200 since %s", up.Format("15:04:05.000"))
	})
	hold(t, l, 2*time.Second, 100)
	rs := l.stop()
	if f.rd.Exited() {
		t.Fatal("recordsd exited during the outage")
	}
	// Cached keys keep working: every request during the outage reached
	// recordsd (500 from it, not 401/500 from auth) — the cold key above was
	// the only one refused by the gateway.
	outage := between(rs, down.Add(200*time.Millisecond), up)
	reportUnexpected(t, "PostgreSQL outage", outage, func(r result) bool { return r.status == 500 && r.body == bodyInternal })
	if summary(outage)[500] == 0 {
		t.Errorf("no 500 during the outage: %v", summary(outage))
	}
	after := between(rs, recovered.Add(time.Second), time.Now().Add(time.Hour))
	reportUnexpected(t, "after PostgreSQL is back", after, nil)
	if len(after) < 20 {
		t.Errorf("only %d responses after recovery", len(after))
	}
	t.Logf("PostgreSQL down %s, first 200 %s after: outage %v, after %v", up.Sub(down).Round(time.Millisecond),
		recovered.Sub(up).Round(time.Millisecond), summary(outage), summary(after))
}

func testUpstreamHung(t *testing.T, f *faultEnv) {
	baseline := settledGoroutines(t, f.s, 0)
	f.upstream.Stall()
	const concurrent = 40
	peak := 0.0
	for round := range 3 {
		var wg sync.WaitGroup
		results := make([]result, concurrent)
		for i := range concurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = send(t.Context(), f.s.Client, f.s.HTTPSURL, &f.calls[i%len(f.calls)])
			}()
		}
		time.Sleep(upstreamTimeout / 2) // sample mid-flight; correctness does not depend on it
		peak = max(peak, goroutines(t, f.s))
		wg.Wait()
		for _, r := range results {
			if r.status != 504 || r.body != bodyTimeout {
				t.Fatalf("round %d: hung upstream answered %d %v %s, want 504 %s", round, r.status, r.err, r.body, bodyTimeout)
			}
			// No 504 can come sooner than the timeout (its timer starts after
			// r.at); the upper bound only tells the configured timeout from
			// the Caddyfile's 30 s default, with room for 40 requests at once
			// on a loaded machine.
			if r.dur < upstreamTimeout || r.dur >= 10*upstreamTimeout {
				t.Errorf("round %d: 504 after %s, want the configured %s (not the 30 s default)", round, r.dur, upstreamTimeout)
			}
		}
	}
	f.upstream.Restore()
	// No pile-up: once the timeouts fired, the gateway's goroutines return to
	// where they were (idle upstream connections aside).
	after := settledGoroutines(t, f.s, baseline+30)
	t.Logf("gateway goroutines: baseline %.0f, peak with %d hung requests %.0f, after %.0f", baseline, concurrent, peak, after)
	checkServes(t, f.env)
}

// settledGoroutines polls the gateway's goroutine count until it is at most
// limit (limit 0: until two samples a second apart agree within 5).
func settledGoroutines(t *testing.T, s *stack.Stack, limit float64) float64 {
	t.Helper()
	var last float64 = -100
	var v float64
	stack.WaitFor(t, 20*time.Second, "gateway goroutines to settle", func() error {
		v = goroutines(t, s)
		defer func() { last = v }()
		if limit > 0 {
			if v > limit {
				return fmt.Errorf("%.0f goroutines, want ≤ %.0f", v, limit)
			}
			return nil
		}
		if v-last > 5 || last-v > 5 {
			time.Sleep(time.Second) // spacing the samples
			return fmt.Errorf("%.0f then %.0f", last, v)
		}
		return nil
	})
	return v
}

func testUpstreamSlow(t *testing.T, f *faultEnv) {
	c := f.calls[0]
	f.upstream.Delay(upstreamTimeout + 500*time.Millisecond)
	r := send(t.Context(), f.s.Client, f.s.HTTPSURL, &c)
	if r.status != 504 || r.body != bodyTimeout {
		t.Errorf("upstream slower than the timeout: %d %v %s", r.status, r.err, r.body)
	}
	f.upstream.Delay(100 * time.Millisecond)
	r = send(t.Context(), f.s.Client, f.s.HTTPSURL, &c)
	if r.status != 200 || !isGraphQLData(r.body) {
		t.Errorf("upstream slow but within the timeout: %d %v %s", r.status, r.err, r.body)
	}
	f.upstream.Delay(0)
}

func testUpstreamRefusing(t *testing.T, f *faultEnv) {
	l := hammer(loadCtx(t), f.s.Client, f.s.HTTPSURL, 4, 20*time.Millisecond, f.calls)
	hold(t, l, time.Second, 50)
	down := time.Now()
	f.rd.Kill()
	hold(t, l, 2*time.Second, 50)
	f.rd = f.s.StartRecordsd()
	up := time.Now()
	hold(t, l, 2*time.Second, 50)
	rs := l.stop()
	outage := between(rs, down.Add(100*time.Millisecond), up)
	reportUnexpected(t, "recordsd killed and restarted", rs, func(r result) bool {
		// In flight when recordsd died, or sent while it was down.
		return r.status == 502 && r.body == bodyBadGateway && !r.at.Add(r.dur).Before(down) && r.at.Before(up)
	})
	if summary(outage)[502] == 0 {
		t.Errorf("no 502 while recordsd was down: %v", summary(outage))
	}
	t.Logf("recordsd down %s: %v", up.Sub(down).Round(time.Millisecond), summary(outage))
}

func testGatewayKilled(t *testing.T, f *faultEnv) {
	l := hammer(loadCtx(t), f.s.Client, f.s.HTTPSURL, 4, 20*time.Millisecond, f.calls)
	hold(t, l, time.Second, 50)
	down := time.Now() // before the signal: requests failing while the process dies count as "during"
	f.gw.Kill()
	f.gw = f.s.StartGateway("caddyfile/Caddyfile.local")
	up := time.Now()
	hold(t, l, 2*time.Second, 100)
	rs := l.stop()
	// Clients see connection errors only while no gateway runs (and for up to
	// a second after, on keep-alive connections pooled before the kill that a
	// client tries once more); every answer, before, between and after, is a
	// normal one: no 5xx.
	reportUnexpected(t, "gateway SIGKILLed and restarted", rs, func(r result) bool {
		return r.status == 0 && !r.at.Add(r.dur).Before(down) && r.at.Before(up.Add(time.Second))
	})
	after := between(rs, up, time.Now().Add(time.Hour))
	if summary(after)[200] == 0 {
		t.Errorf("no 200 after the restart: %v", summary(after))
	}
	t.Logf("gateway down %s: during %v, after %v", up.Sub(down).Round(time.Millisecond), summary(between(rs, down, up)), summary(after))
}
