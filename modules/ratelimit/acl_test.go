package ratelimit

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// minimalACL is the ACL docs/redis.md gives the gateway's Redis user (keys
// civicgate:*): every module's commands, the commands the rate limit
// script calls, and what go-redis needs to connect and route.
var minimalACL = []string{"resetkeys", "~civicgate:*", "resetchannels", "-@all",
	"+ping", "+hello", "+auth", "+select",
	"+evalsha", "+eval", "+script|load", "+time", "+hget", "+hset", "+hdel", "+hgetall", "+pexpire", // civic_rate_limit
	"+get", "+set", // graphql_guard persisted queries
	"+mget", "+incr", // graphql_cache shared tier (with get, set)
	"+cluster|slots", "+command", // Cluster: the slot map, the command table
}

// setMinimalACL creates user with minimalACL and password on every node c reaches.
func setMinimalACL(t *testing.T, c redis.UniversalClient, user, password string) {
	t.Helper()
	args := append([]any{"ACL", "SETUSER", user, "on", ">" + password}, toAny(minimalACL)...)
	set := func(ctx context.Context, n *redis.Client) error { return n.Do(ctx, args...).Err() }
	var err error
	if cl, ok := c.(*redis.ClusterClient); ok {
		err = cl.ForEachShard(context.Background(), set)
	} else {
		err = set(context.Background(), c.(*redis.Client))
	}
	if err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

// TestMinimalACL: with only docs/redis.md's minimal ACL, the limiter warms
// up and decides (leases renewed and settled: every script path) without a
// store error, the persisted-query and cache commands work on their
// prefixes, and a key outside civicgate:* is refused with cause auth.
func TestMinimalACL(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	setMinimalACL(t, srv.Client(), "gateway", "acl-pw")
	u := aclURL(t, srv.URL(), "gateway", "acl-pw")
	l := engineLimiter(t, u, "civicgate:rl:", 0.05, nil)
	rates := []contract.Rate{{Quota: 100, Window: time.Minute}, {Quota: 1000, Window: time.Hour}}
	var admitted int64
	for range 150 {
		d, err := take1(context.Background(), l, "acl", rates...)
		if err != nil {
			t.Fatal(err)
		}
		admitted += d.granted
	}
	if n := storeErrors(l); n != 0 || admitted != 100 {
		t.Fatalf("%v store errors, %d admitted of 100: the minimal ACL misses a command", n, admitted)
	}

	tg, err := (&redisconn.Config{URL: u}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tg.Open(redisconn.Tuning{})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "civicgate:apq:ab12", "{ x }", time.Minute).Err(); err != nil {
		t.Fatal("persisted SET:", err)
	}
	if err := c.Get(ctx, "civicgate:apq:ab12").Err(); err != nil {
		t.Fatal("persisted GET:", err)
	}
	pipe := c.Pipeline()
	pipe.Incr(ctx, "civicgate:cache:{0a}purge-epoch")
	pipe.MGet(ctx, "civicgate:cache:{0a}purge-epoch", "civicgate:cache:{0a}entry")
	pipe.Set(ctx, "civicgate:cache:{0a}entry", "v", time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal("cache pipeline:", err)
	}
	err = c.Get(ctx, "other:key").Err()
	if redisconn.Cause(err) != redisconn.CauseAuth || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("a key outside civicgate:*: %v (cause %s), want NOPERM, cause auth", err, redisconn.Cause(err))
	}
}

// aclURL is u with user and password.
func aclURL(t *testing.T, u, user, password string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword(user, password)
	return p.String()
}
