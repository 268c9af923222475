package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestEveryStoreErrorLogged (docs/design.md D36): in on_store_error closed, a single
// failed Redis call — which does not open the breaker — is logged with its
// cause and counted in civicgate_redis_errors_total; a burst of failures is
// one line per second.
func TestEveryStoreErrorLogged(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)), MaxRetries: -1,
		DialerRetries: 1, DialTimeout: time.Second})
	l := newLimiter(limiterConfig{redis: client, prefix: "rl:", timeout: time.Second, mode: modeClosed, share: 0.02,
		failures: 100, cooldown: time.Second, maxKeys: 1000})
	t.Cleanup(func() { _ = l.Destruct() })
	r, err := redisconn.NewReporter("ratelimit", reg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	l.reporter.Store(r)
	refused := map[string]string{"component": "ratelimit", "cause": "refused"}
	before := gathered(t, reg, redisconn.ErrorsMetric, refused) // counters live as long as the process
	rate := contract.Rate{Quota: 100, Window: time.Minute}
	if _, err := take1(context.Background(), l, "k", rate); !errors.Is(err, errStoreDown) {
		t.Fatalf("take: %v, want errStoreDown (closed mode: 500)", err)
	}
	if l.breaker.openUntil.Load() != 0 {
		t.Fatal("the breaker opened on one failure: the test needs it closed")
	}
	lines := logs.FilterMessageSnippet("rate limit store error").All()
	if len(lines) != 1 || lines[0].Level != zap.ErrorLevel {
		t.Fatalf("%d store error lines after one failure, want 1 at error: %v", len(lines), logs.All())
	}
	if f := lines[0].ContextMap(); f["cause"] != redisconn.CauseRefused || f["mode"] != modeClosed {
		t.Errorf("log fields %v: want cause refused, mode closed", f)
	}
	for range 9 {
		_, _ = take1(context.Background(), l, "k", rate)
	}
	if n := logs.FilterMessageSnippet("rate limit store error").Len(); n != 1 {
		t.Errorf("%d lines after a burst of 10 failures within a second, want 1", n)
	}
	if got := gathered(t, reg, redisconn.ErrorsMetric, refused) - before; got != 10 {
		t.Errorf("civicgate_redis_errors_total{cause=refused} rose by %v, want 10", got)
	}
	if got := storeErrors(l); got != 10 {
		t.Errorf("store_errors_total = %v, want 10", got)
	}
}

// gathered is the value of the counter name with labels in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s %v", name, labels)
	return 0
}

// TestFallbacksCountedWithTheBreakerOpen: failed calls open the breaker;
// while it is open a fresh key is decided in memory with no call failing, so
// store errors do not move, and once it closes Redis admits the quota again:
// twice the quota in one window with no store error in between (the e2e
// burst test once judged such a round undisturbed and saw a 101st request
// of a 100/min key admitted). The fallback counter counts those decisions.
func TestFallbacksCountedWithTheBreakerOpen(t *testing.T) {
	_, prefix := testenv.Redis(t)
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	l := testLimiter(t, proxy.Addr(), prefix, 0.02)
	clock := &fakeClock{now: time.Now().UnixMicro()}
	l.clock = clock.time
	rate := contract.Rate{Quota: 5, Window: time.Minute}
	proxy.Cut()
	for i := range 3 { // breaker_failures
		if _, err := take1(context.Background(), l, "cut"+strconv.Itoa(i), rate); err != nil {
			t.Fatal(err)
		}
	}
	if l.breaker.openUntil.Load() == 0 {
		t.Fatal("three failed calls did not open the breaker")
	}
	proxy.Restore()
	errors0, fallbacks0 := storeErrors(l), counted(t, l.metrics.Load().fallbacks)
	admitted := int64(0)
	for range 5 { // the breaker open: memory
		d, _ := take1(context.Background(), l, "fresh", rate)
		admitted += d.granted
	}
	clock.now += l.breaker.cooldown.Microseconds() // the probe goes to Redis, which never saw those 5
	testenv.Eventually(t, 20*time.Second, "the breaker's probe to close it", func() error {
		_, _ = take1(context.Background(), l, "probe", rate)
		if l.breaker.openUntil.Load() != 0 {
			return fmt.Errorf("still open")
		}
		return nil
	})
	for range 6 {
		d, err := take1(context.Background(), l, "fresh", rate)
		if err != nil {
			t.Fatal(err)
		}
		admitted += d.granted
	}
	if got := storeErrors(l) - errors0; got != 0 {
		t.Fatalf("%v store errors after the breaker opened: the test needs none", got)
	}
	if admitted != 10 {
		t.Fatalf("admitted %d: want the quota in memory, then again in Redis", admitted)
	}
	if got := counted(t, l.metrics.Load().fallbacks) - fallbacks0; got != 5 {
		t.Fatalf("store_fallbacks_total rose by %v, want the 5 decisions made with the breaker open", got)
	}
}

// counted is a counter's value.
func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
