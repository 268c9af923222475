package gqlcache

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestSharedOnEngines runs the shared tier on each deployed form of Redis —
// a standalone node, a 3-master Cluster, a Sentinel-watched master, TLS with
// an ACL user — as two gateways see it: what one stores the other serves
// byte for byte, a purge is seen by both, and the change feed still makes a
// changed family's entry unusable everywhere.
//
// The engines start in parallel subtests (each its own processes, database
// and ports), beside the failover tests' (shared_failover_test.go).
func TestSharedOnEngines(t *testing.T) {
	t.Run("sentinel failover", testSharedSentinelFailover)
	t.Run("cluster failover", testSharedClusterFailover)
	for _, e := range []struct {
		name  string
		start func(t *testing.T) engine
	}{
		{"standalone", func(t *testing.T) engine { return engine{url: testenv.StartRedisServer(t).URL()} }},
		{"cluster", func(t *testing.T) engine {
			c := testenv.StartRedisCluster(t, 3, 0)
			return engine{url: c.URL(), cluster: c}
		}},
		{"sentinel", func(t *testing.T) engine {
			s := testenv.StartRedisSentinel(t)
			return engine{url: s.URL(), sentinel: s}
		}},
		{"tls+acl", func(t *testing.T) engine { return engine{url: testenv.StartRedisTLS(t).URL()} }},
	} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			eng := e.start(t)
			redisURL, cluster := eng.url, eng.cluster
			dsn, conn := changeFeed(t)
			var data atomic.Int64
			data.Store(1)
			a := newNode(t, "A", dsn, DefaultChannel, redisURL, "cache:", &data)
			b := newNode(t, "B", dsn, DefaultChannel, redisURL, "cache:", &data)
			// warmed when opened, before any request: connected to every
			// master of a cluster (its slot map loaded), to the master of a Sentinel
			want := uint32(1)
			if cluster != nil {
				want = 3
			}
			if st := a.in.shared.client.PoolStats(); st.TotalConns < want {
				t.Fatalf("%d connections before the first request, want at least %d (warmed at open)", st.TotalConns, want)
			}
			docs := make([]string, 8)
			for i := range docs {
				docs[i] = fmt.Sprintf("doc%d", i)
				miss, _ := a.serve(t, docs[i], "bills")
				wantStatus(t, "A's miss of "+docs[i], miss, storedStatus)
				hit, _ := b.serve(t, docs[i], "bills")
				wantStatus(t, "B's shared hit of "+docs[i], hit, sharedHitStatus)
				if !bytes.Equal(hit.Body.Bytes(), miss.Body.Bytes()) {
					t.Fatalf("B served %s, A stored %s", hit.Body, miss.Body)
				}
			}
			if cluster != nil {
				if n := mastersHolding(t, cluster, "cache:{*"); n < 2 {
					t.Fatalf("8 entries landed on %d of 3 masters", n)
				}
			}

			// A purge through A: B (its memory emptied) ignores every entry stored before.
			if err := a.in.shared.purge(); err != nil {
				t.Fatal(err)
			}
			if eng.sentinel != nil { // the purge returned once a replica had it (WAIT)
				replicaHasPurge(t, eng.sentinel, a.in.shared.epochKeys())
			}
			b.in.store.flush()
			for _, doc := range docs[:4] {
				w, _ := b.serve(t, doc, "bills")
				wantStatus(t, "B after A's purge, "+doc, w, storedStatus)
			}
			a.in.store.flush()
			if w, _ := a.serve(t, docs[0], "bills"); w.Header().Get("Cache-Status") != sharedHitStatus ||
				!strings.Contains(w.Body.String(), `"from":"B"`) {
				t.Fatalf("A after the purge, B's fresh entry: %q %s", w.Header().Get("Cache-Status"), w.Body)
			}

			// A bills change: neither serves a bills entry from before it.
			data.Store(2)
			change(t, conn, "bills")
			awaitCursor(t, a, 1)
			awaitCursor(t, b, 1)
			for _, n := range []*node{a, b} {
				for _, doc := range docs {
					w, _ := n.serve(t, doc, "bills")
					if !strings.Contains(w.Body.String(), `"version":2`) {
						t.Fatalf("%s after the change, %s: %q %s", n.name, doc, w.Header().Get("Cache-Status"), w.Body)
					}
				}
			}
			if n := a.sharedCount(t, sharedError) + b.sharedCount(t, sharedError); n != 0 {
				t.Fatalf("%v shared Redis errors", n)
			}
		})
	}
}

// engine is a Redis started for a test: its URL, and the cluster or
// Sentinel deployment behind it.
type engine struct {
	url      string
	cluster  *testenv.RedisCluster
	sentinel *testenv.RedisSentinel
}

// replicaHasPurge checks that the Sentinel replica (not the master) holds
// every purge epoch at 1.
func replicaHasPurge(t *testing.T, s *testenv.RedisSentinel, keys []string) {
	t.Helper()
	master := s.MasterAddr(t)
	for _, addr := range s.DataAddrs() {
		if addr == master {
			continue
		}
		replica := redis.NewClient(&redis.Options{Addr: addr})
		defer replica.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		vals, err := replica.MGet(ctx, keys[0], keys[len(keys)/2], keys[len(keys)-1]).Result()
		if err != nil || fmt.Sprint(vals) != "[1 1 1]" {
			t.Fatalf("the replica's purge epochs right after the purge: %v, %v", vals, err)
		}
		return
	}
	t.Fatal("no replica")
}

// mastersHolding counts the cluster's masters that hold keys matching pattern.
func mastersHolding(t *testing.T, c *testenv.RedisCluster, pattern string) int {
	t.Helper()
	var n atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Client().ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, pattern).Result()
		if len(keys) > 0 {
			n.Add(1)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(n.Load())
}

// openTestShared opens a shared tier on redisURL (any form redisconn
// reads) as Provision does, its errors reported in a registry of its own.
func openTestShared(t testing.TB, redisURL, prefix string, timeout time.Duration) (*shared, *prometheus.Registry) {
	t.Helper()
	a := &App{Shared: &SharedConfig{Config: redisconn.Config{URL: redisURL}, KeyPrefix: prefix, Timeout: caddy.Duration(timeout)}}
	sc, err := a.sharedOptions(&listenConfig{feed: "change_events"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rep, err := redisconn.NewReporter(reporterComponent, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return openShared(sc, rep), reg
}

// redisErrors is civicgate_redis_errors_total{component="gqlcache"}, all
// causes: one counter for the process (internal/collectors), so a test
// reads a difference while no other test runs.
func (n *node) redisErrors(t *testing.T) float64 {
	t.Helper()
	mfs, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != redisconn.ErrorsMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "component" && l.GetValue() == reporterComponent {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
