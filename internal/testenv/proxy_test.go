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
	deadline := time.Now().Add(5 * time.Second)
	for c.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("ping did not recover after Restore")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPostgresGivesEmptyDatabase(t *testing.T) {
	dsn := Postgres(t)
	if dsn == AdminDSN() {
		t.Fatal("Postgres returned the admin DSN")
	}
}
