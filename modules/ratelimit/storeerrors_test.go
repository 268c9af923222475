package ratelimit

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testenv"
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
