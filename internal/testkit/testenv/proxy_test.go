package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestProxyCutAndRestore(t *testing.T) {
	_, _ = Redis(t) // fails the test if Redis is not running
	p := NewProxy(t, RedisAddr())
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping through proxy: %v", err)
	}
	p.Cut()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping succeeded while the proxy was cut")
	}
	p.Restore()
	Eventually(t, 10*time.Second, "ping to recover after Restore", func() error { return c.Ping(ctx).Err() })
}

func TestPostgresGivesEmptyDatabase(t *testing.T) {
	dsn := Postgres(t)
	if dsn == AdminDSN() {
		t.Fatal("Postgres returned the admin DSN")
	}
}

func TestProxyStallAndDelay(t *testing.T) {
	_, _ = Redis(t)
	p := NewProxy(t, RedisAddr())
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping through proxy: %v", err)
	}
	p.Stall()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping succeeded while the proxy was stalled")
	}
	p.Restore()
	p.Delay(100 * time.Millisecond)
	// The successful ping's own duration: a lower bound, which load only lengthens.
	var took time.Duration
	Eventually(t, 10*time.Second, "ping to recover after Restore", func() error {
		start := time.Now()
		err := c.Ping(ctx).Err()
		took = time.Since(start)
		return err
	})
	if took < 200*time.Millisecond {
		t.Fatalf("delayed ping took %s, want ≥ 200ms (two delayed chunks)", took)
	}
}

func TestRedisServerRestart(t *testing.T) {
	r := StartRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping succeeded while redis-server was killed")
	}
	r.Start()
	Eventually(t, 10*time.Second, "ping to recover after restart", func() error { return c.Ping(ctx).Err() })
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatal("a restarted server without persistence still had the key")
	}
}
