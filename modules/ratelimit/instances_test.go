package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// testLimiter is one gateway instance's store stack against addr. Its Redis
// timeouts are generous: the tests cut Redis (connections refused at once),
// never stall it, and a 50 ms deadline on a loaded 2-core machine turned
// slow-but-successful calls into store errors and local admissions.
func testLimiter(t testing.TB, addr, prefix string, share float64) *limiter {
	t.Helper()
	const timeout = 2 * time.Second
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{addr},
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxRetries: -1, ContextTimeoutEnabled: true})
	l := newLimiter(limiterConfig{redis: client, prefix: prefix, timeout: timeout, mode: modeLocal,
		share: share, failures: 3, cooldown: 100 * time.Millisecond, maxKeys: 100_000})
	t.Cleanup(func() { _ = l.Destruct() })
	return l
}

// TestTwoInstancesShareQuota: two instances (each with its own local cache and
// leases) hammering one key admit at most the quota and at least 95 % of it,
// and use far fewer Redis round trips than admitted requests.
func TestTwoInstancesShareQuota(t *testing.T) {
	_, prefix := testenv.Redis(t)
	r := contract.Rate{Quota: 2000, Window: time.Minute} // lease = 40 tokens
	a := testLimiter(t, testenv.RedisAddr(), prefix, 0.02)
	b := testLimiter(t, testenv.RedisAddr(), prefix, 0.02)
	var admitted atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, l := range []*limiter{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1500; i++ {
				d, err := take1(context.Background(), l, "shared", r)
				if err != nil {
					t.Error(err)
					return
				}
				admitted.Add(d.granted)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if elapsed >= r.Window {
		t.Fatalf("took %s: the test needs every request inside one window", elapsed)
	}
	// Sliding window: never more than the quota in one window, however many
	// instances; leases only hold units back (≤ one lease per instance).
	expected := float64(r.Quota)
	got := float64(admitted.Load())
	if got > expected || got < expected-0.05*float64(r.Quota) {
		t.Fatalf("admitted %v of quota %d (%s)", got, r.Quota, elapsed)
	}
	calls := testutilCount(a) + testutilCount(b)
	if calls*5 > uint64(got) {
		t.Fatalf("%d Redis calls for %v admitted: leasing not effective", calls, got)
	}
	t.Logf("admitted %v (expected %.0f), %d Redis calls, %s", got, expected, calls, elapsed)
}

// TestTwoInstancesRedisCut: with Redis cut each instance enforces the limit
// alone (no errors); restored, both count in Redis again.
func TestTwoInstancesRedisCut(t *testing.T) {
	_, prefix := testenv.Redis(t)
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	r := contract.Rate{Quota: 10, Window: time.Minute}
	a := testLimiter(t, proxy.Addr(), prefix, 0.02)
	b := testLimiter(t, proxy.Addr(), prefix, 0.02)
	count := func(l *limiter, key string, n int) (ok int64) {
		for range n {
			d, err := take1(context.Background(), l, key, r)
			if err != nil {
				t.Fatal(err)
			}
			ok += d.granted
		}
		return ok
	}
	if got := count(a, "k", 6) + count(b, "k", 6); got != 10 {
		t.Fatalf("shared: admitted %d, want 10", got)
	}
	proxy.Cut()
	// b still knows "k" is over its limit until Redis' retry time
	if got := count(b, "k", 3); got != 0 {
		t.Fatalf("cut: refusal cache forgot: %d admitted", got)
	}
	if ga, gb := count(a, "cut", 15), count(b, "cut", 15); ga != 10 || gb != 10 {
		t.Fatalf("cut: admitted %d and %d, want 10 each (per-instance limits)", ga, gb)
	}
	proxy.Restore()
	// Await both breakers' probes. Every probe uses a key of its own: a probe
	// key reused while the breaker is still open spends its quota locally, and
	// on a loaded machine the refusal cache then outlived the deadline.
	probes := 0
	testenv.Eventually(t, 20*time.Second, "both breakers to go back to Redis", func() error {
		_, errA := take1(context.Background(), a, fmt.Sprintf("probe-a-%d", probes), r)
		_, errB := take1(context.Background(), b, fmt.Sprintf("probe-b-%d", probes), r)
		probes++
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if a.breaker.openUntil.Load() != 0 || b.breaker.openUntil.Load() != 0 {
			return fmt.Errorf("breakers open until %d and %d", a.breaker.openUntil.Load(), b.breaker.openUntil.Load())
		}
		return nil
	})
	// shared again: a fresh key's quota is split between the instances
	shared := func(l *limiter, n int) (ok int64) {
		for range n {
			d, _ := take1(context.Background(), l, "fresh", r)
			ok += d.granted
		}
		return ok
	}
	if got := shared(a, 6) + shared(b, 6); got != 10 {
		t.Fatalf("after restore: admitted %d, want 10 in total", got)
	}
}

func testutilCount(l *limiter) uint64 {
	m := &dto.Metric{}
	if err := l.metrics.Load().redisCalls.Write(m); err != nil {
		panic(err)
	}
	return uint64(m.GetCounter().GetValue())
}
