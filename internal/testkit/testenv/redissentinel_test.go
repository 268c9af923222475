package testenv

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// TestRedisSentinelTLSFailsOver starts the TLS engine: a failover client
// that trusts only the test CA finds the master through the sentinels over
// TLS and writes as the ACL user (a dangerous command refused), the write
// reaches the replica over TLS, the sentinels (logged in to the data nodes
// as the admin) promote the replica when the master is killed, and the new
// master keeps the write. Plain TCP to a sentinel and the default user on
// the master are refused; URL is the rediss:// form.
func TestRedisSentinelTLSFailsOver(t *testing.T) {
	t.Parallel()
	s := StartRedisSentinelTLS(t)
	u, err := url.Parse(s.URL())
	if err != nil || u.Scheme != "rediss" || u.User.Username() != s.Username || u.Query().Get("tls_ca_file") != s.CAFile ||
		u.Query().Get("master_name") != s.MasterName() || len(u.Query()["addr"]) != 2 {
		t.Fatalf("URL %q (%v)", s.URL(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT: %d replicas acknowledged (%v), want 1", n, err)
	}
	if err := c.FlushAll(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("FLUSHALL as the ACL user: %v, want NOPERM", err)
	}
	plain := redis.NewSentinelClient(&redis.Options{Addr: s.SentinelAddrs()[0], MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second})
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Error("plain TCP to a sentinel: PING succeeded")
	}
	_ = plain.Close()
	anon := redis.NewClient(&redis.Options{Addr: s.MasterAddr(t), TLSConfig: s.sec.clientTLS(), MaxRetries: -1})
	if err := anon.Get(ctx, "k").Err(); err == nil {
		t.Error("the default user on the master: GET succeeded")
	}
	_ = anon.Close()
	old := s.MasterAddr(t)
	next := s.Failover(t)
	if next == old || s.MasterAddr(t) != next {
		t.Fatalf("after failover the master is %s (was %s)", next, old)
	}
	c = s.Client()
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("k after failover = %q, %v", got, err)
	}
}
