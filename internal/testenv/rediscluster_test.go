package testenv

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisClusterFailsOverAKilledMaster starts 3 masters with one replica
// each, writes keys on every shard, kills the master of the first slot range
// and checks that its replica took over with the keys it had replicated,
// and that the cluster takes writes on every shard again.
func TestRedisClusterFailsOverAKilledMaster(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t, 3, 1)
	if got := len(c.Addrs()); got != 6 {
		t.Fatalf("%d nodes, want 6", got)
	}
	before := c.Masters(t)
	if len(before) != 3 {
		t.Fatalf("masters %v, want 3", before)
	}
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 30 {
		if err := cl.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// WAIT: every write reached the replicas before the kill.
	if err := cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Do(ctx, "WAIT", 1, 5000).Err()
	}); err != nil {
		t.Fatal(err)
	}
	killed := c.KillMaster(t, 0)
	if killed != before[0] {
		t.Fatalf("killed %s, want the first range's master %s", killed, before[0])
	}
	c.WaitHealthy(t)
	after := c.Masters(t)
	if after[0] == before[0] || after[1] != before[1] || after[2] != before[2] {
		t.Fatalf("masters after failover %v, before %v: want only the first replaced", after, before)
	}
	cl = c.Client() // a fresh slot map: the first client's is refreshed lazily, by go-redis
	for i := range 30 {
		got, err := cl.Get(ctx, "k"+strconv.Itoa(i)).Int()
		if err != nil || got != i {
			t.Fatalf("k%d after failover = %d, %v", i, got, err)
		}
		if err := cl.Incr(ctx, "k"+strconv.Itoa(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if u := c.URL(); u[:8] != "redis://" || !strings.Contains(u, "mode=cluster") {
		t.Fatalf("URL %q", u)
	}
}
