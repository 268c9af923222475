package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
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

// TestRedisClusterTLSServesTheACLUserOverTLS starts 2 masters with one
// replica each on TLS only: the ACL user writes through a cluster client that
// trusts only the test CA (the nodes announce their TLS ports, which verify
// as 127.0.0.1), the writes reach the replicas (replication over TLS), a
// dangerous command is refused, and so are the default user, plain TCP and
// a client that does not trust the CA; URL is the rediss:// form.
func TestRedisClusterTLSServesTheACLUserOverTLS(t *testing.T) {
	t.Parallel()
	c := StartRedisClusterTLS(t, 2, 1)
	addrs := map[string]bool{}
	for _, a := range c.Addrs() {
		addrs[a] = true
	}
	for _, m := range c.Masters(t) {
		if !addrs[m] {
			t.Fatalf("master %s announced, the nodes' TLS ports are %v", m, c.Addrs())
		}
	}
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if err := cl.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.Do(ctx, "WAIT", 1, 5000).Int()
		if err == nil && n != 1 {
			err = fmt.Errorf("WAIT on %s: %d replicas acknowledged, want 1", m.Options().Addr, n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := cl.FlushAll(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("FLUSHALL as the ACL user: %v, want NOPERM", err)
	}
	u, err := url.Parse(c.URL())
	if err != nil || u.Scheme != "rediss" || u.User.Username() != c.Username || u.Query().Get("tls_ca_file") != c.CAFile ||
		u.Query().Get("mode") != "cluster" || len(u.Query()["addr"]) != 3 {
		t.Fatalf("URL %q (%v)", c.URL(), err)
	}
	if pw, _ := u.User.Password(); pw != c.Password || c.Password == "" {
		t.Fatalf("URL %q: not the ACL user's password", c.URL())
	}
	roots := c.sec.clientTLS().RootCAs
	refused := map[string]*redis.Options{
		"default user": {TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
		"untrusted CA": {Username: c.Username, Password: c.Password, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}},
		"plain TCP":    {Username: c.Username, Password: c.Password},
	}
	for name, o := range refused {
		o.Addr, o.MaxRetries, o.DialTimeout, o.ReadTimeout = c.Addrs()[0], -1, 2*time.Second, 2*time.Second
		n := redis.NewClient(o)
		if err := n.Ping(ctx).Err(); err == nil {
			t.Errorf("%s: PING succeeded", name)
		}
		_ = n.Close()
	}
}
