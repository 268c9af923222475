package testenv

import (
	"context"
	"net/url"
	"testing"
	"time"
)

// TestRedisSentinelFailsOver starts the master, replica and three sentinels,
// writes through a failover client, kills the master and checks that the
// sentinels promoted the replica, which kept the replicated write and takes
// new ones.
func TestRedisSentinelFailsOver(t *testing.T) {
	t.Parallel()
	s := StartRedisSentinel(t)
	old := s.MasterAddr(t)
	if old != s.DataAddrs()[0] {
		t.Fatalf("master %s, want the first started %s", old, s.DataAddrs()[0])
	}
	u, err := url.Parse(s.URL())
	if err != nil || u.Query().Get("master_name") != s.MasterName() || len(u.Query()["addr"]) != 2 {
		t.Fatalf("URL %q (%v)", s.URL(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	next := s.Failover(t)
	if next == old || next != s.DataAddrs()[1] || s.MasterAddr(t) != next {
		t.Fatalf("after failover the master is %s (was %s), want the replica %s", next, old, s.DataAddrs()[1])
	}
	c = s.Client()
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("k after failover = %q, %v", got, err)
	}
	if err := c.Set(ctx, "k2", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
}
