package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// engineLimiter is a limiter on the Redis url names, opened and warmed
// through redisconn as the App does (with a test's generous timeout), whose
// node-level Redis commands calls counts (nil: not counted).
func engineLimiter(t testing.TB, url, prefix string, share float64, calls *atomic.Int64) *limiter {
	t.Helper()
	tg, err := (&redisconn.Config{URL: url}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 2 * time.Second
	client := tg.Open(redisconn.Tuning{DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxRetries: -1, ContextTimeoutEnabled: true})
	if calls != nil {
		countCalls(client, calls)
	}
	if err := tg.Warm(context.Background(), client, windowScript); err != nil {
		t.Fatal(err)
	}
	if calls != nil {
		calls.Store(0) // the warm-up's commands are not decisions'
	}
	l := newLimiter(limiterConfig{redis: client, prefix: prefix, timeout: timeout, mode: modeLocal,
		share: share, failures: 3, cooldown: 100 * time.Millisecond, maxKeys: 100_000})
	t.Cleanup(func() { _ = l.Destruct() })
	return l
}

// callCounter counts the commands and pipelines a client sends.
type callCounter struct{ n *atomic.Int64 }

func (c callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// countCalls counts every round trip of client in n: on a Cluster, on each
// node (so that redirects and slot-map loads count too).
func countCalls(client redis.UniversalClient, n *atomic.Int64) {
	if cl, ok := client.(*redis.ClusterClient); ok {
		cl.OnNewNode(func(node *redis.Client) { node.AddHook(callCounter{n}) })
		return
	}
	client.AddHook(callCounter{n})
}

func storeErrors(l *limiter) float64 {
	m := &dto.Metric{}
	_ = l.metrics.Load().storeErrors.Write(m)
	return m.GetCounter().GetValue()
}

// TestSharedQuotaOnEngines: two limiter instances on a real 3-master Redis
// Cluster, and on Sentinel, share each key's quota (two policies: the
// script's two keys, which must share a slot), without a store error — a
// CROSSSLOT would be one — for keys spread over the masters, including keys
// with braces (the hash tag is escaped).
func TestSharedQuotaOnEngines(t *testing.T) {
	cluster := testenv.StartRedisCluster(t, 3, 0)
	sentinel := testenv.StartRedisSentinel(t)
	setMinimalACL(t, cluster.Client(), "gateway", "acl-pw") // on every node: docs/redis.md's ACL suffices on a Cluster
	t.Run("gateway_first_request", func(t *testing.T) { firstRequestOnCluster(t, aclURL(t, cluster.URL(), "gateway", "acl-pw")) })
	for _, engine := range []struct{ name, url string }{{"cluster", aclURL(t, cluster.URL(), "gateway", "acl-pw")},
		{"sentinel", sentinel.URL()}} {
		t.Run(engine.name, func(t *testing.T) {
			var c *testenv.RedisCluster
			if engine.name == "cluster" {
				c = cluster
			}
			checkSharedQuota(t, engine.url, c, []string{"alpha", "beta", "gamma", "we{ird}", "{}", "50%"})
		})
	}
}

// firstRequestOnCluster (docs/design.md D36): a gateway on the Cluster in
// on_store_error closed answers its very first request from Redis — the
// client was warmed at provision, within the 50 ms call deadline — and
// counts no store error.
func firstRequestOnCluster(t *testing.T, url string) {
	prefix := "civicgate:rl" + testenv.RandomSuffix(6) + ":"
	g := startGateway(t, redisGlobal(url, prefix, "on_store_error closed"), limitRoute("100/m"))
	// the counter is the process's: other tests (and -count runs) add to it
	before := g.scrape(t, "civicgate_ratelimit_store_errors_total")
	for i := range 3 {
		if r := g.get(t, "/a", "first", "t"); r.status != 200 || r.limit != fmt.Sprintf(`"t";r=%d;t=60`, 99-i) {
			t.Fatalf("request %d right after start: %+v", i+1, r)
		}
	}
	if n := g.scrape(t, "civicgate_ratelimit_store_errors_total") - before; n != 0 {
		t.Fatalf("%v store errors", n)
	}
}

// checkOneSlotPerKey: each key's Redis keys (one per policy) hash to one
// slot — the cluster itself says so (CLUSTER KEYSLOT) — and the keys reach
// more than one master.
func checkOneSlotPerKey(t *testing.T, cluster *testenv.RedisCluster, set *policySet, prefix string, keys []string) {
	t.Helper()
	c := cluster.Client()
	ranges := map[int]bool{}
	for _, k := range keys {
		rk := set.redisKeys(prefix, k)
		slot := int64(-1)
		for _, key := range rk {
			s, err := c.ClusterKeySlot(context.Background(), key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if slot >= 0 && s != slot {
				t.Fatalf("key %q: Redis keys %q hash to slots %d and %d", k, rk, slot, s)
			}
			slot = s
		}
		ranges[cluster.RangeOf(t, rk[0])] = true
	}
	if len(ranges) < 2 {
		t.Fatalf("the keys all hash to one master: the test would not spread the load")
	}
}

// BenchmarkRedisCallsPer1000Admitted: Redis round trips (every command
// and pipeline the client sends; on a Cluster counted per node, so
// redirects and slot-map loads count) per 1000 admitted requests, with
// leases (2 %), on standalone Redis, a 3-master Cluster and Sentinel: 100
// keys of quota 1000/min, 40 requests each per op.
func BenchmarkRedisCallsPer1000Admitted(b *testing.B) {
	engines := []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"standalone", func(b *testing.B) string { return testenv.StartRedisServer(b).URL() }},
		{"cluster", func(b *testing.B) string { return testenv.StartRedisCluster(b, 3, 0).URL() }},
		{"sentinel", func(b *testing.B) string { return testenv.StartRedisSentinel(b).URL() }},
	}
	rate := contract.Rate{Quota: 1000, Window: time.Minute}
	const keys, perKey = 100, 40
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			url := e.url(b)
			var calls atomic.Int64
			var total, admitted int64
			for n := 0; b.Loop(); n++ {
				l := engineLimiter(b, url, "bench"+strconv.Itoa(n)+":", 0.02, &calls)
				for i := range keys * perKey {
					d, err := take1(context.Background(), l, fmt.Sprintf("k%d", i%keys), rate)
					if err != nil || d.fallback {
						b.Fatal("store error", err)
					}
					admitted += d.granted
				}
				total += calls.Load()
			}
			b.ReportMetric(float64(total)*1000/float64(admitted), "redis-calls/1000-admitted")
		})
	}
}
