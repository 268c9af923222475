package subslots

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// newStore is a Store on client and prefix, closed when the test ends.
func newStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// abandon stops s's heartbeat and forgets its leases without giving them
// back: what a crashed instance leaves in Redis.
func (s *Store) abandon() {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
	})
}

// value reads a gauge's or a counter's value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Gauge != nil {
		return out.Gauge.GetValue()
	}
	return out.Counter.GetValue()
}

func card(t *testing.T, c redis.UniversalClient, set string) int64 {
	t.Helper()
	n, err := c.ZCard(context.Background(), set).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustAcquire(t *testing.T, s *Store, key string, max int) Lease {
	t.Helper()
	l, ok := s.Acquire(key, max)
	if !ok {
		t.Fatalf("Acquire(%q, %d) refused, want a lease", key, max)
	}
	return l
}

func refused(t *testing.T, s *Store, key string, max int) {
	t.Helper()
	if _, ok := s.Acquire(key, max); ok {
		t.Fatalf("Acquire(%q, %d) admitted, want a refusal", key, max)
	}
}

// TestBoundAcrossInstances: two instances share key's max; a release on one
// frees a slot for the other; Close gives every lease back.
func TestBoundAcrossInstances(t *testing.T) {
	client, prefix := testenv.Redis(t)
	leases := prometheus.NewGauge(prometheus.GaugeOpts{Name: "leases"})
	a := newStore(t, Config{Client: client, Prefix: prefix, Leases: leases})
	b := newStore(t, Config{Client: client, Prefix: prefix})
	const key = "key_a{b}%"
	first := mustAcquire(t, a, key, 2)
	mustAcquire(t, a, key, 2)
	refused(t, b, key, 2)
	refused(t, a, key, 2)
	if got := card(t, client, prefix+"subs:{%key_a%7Bb%7D%25}"); got != 2 {
		t.Fatalf("the key's set holds %d leases, want 2", got)
	}
	mustAcquire(t, b, "other", 2) // another key has its own slots
	a.Release(first)
	a.Release(first) // twice: no effect
	mustAcquire(t, b, key, 2)
	refused(t, a, key, 2)
	if a.Held() != 1 || b.Held() != 2 || value(t, leases) != 1 {
		t.Fatalf("held a=%d b=%d gauge=%v, want 1, 2, 1", a.Held(), b.Held(), value(t, leases))
	}
	a.Close()
	b.Close()
	if n := card(t, client, setKey(prefix, key)) + card(t, client, setKey(prefix, "other")); n != 0 {
		t.Fatalf("%d leases left after Close", n)
	}
	if value(t, leases) != 0 {
		t.Fatalf("gauge %v after Close", value(t, leases))
	}
}

// TestCrashedInstanceLeasesExpire: an instance that stops without giving
// its leases back frees them once their TTL passes.
func TestCrashedInstanceLeasesExpire(t *testing.T) {
	client, prefix := testenv.Redis(t)
	crashed := newStore(t, Config{Client: client, Prefix: prefix, TTL: time.Second})
	live := newStore(t, Config{Client: client, Prefix: prefix, TTL: time.Second})
	mustAcquire(t, crashed, "k", 2)
	mustAcquire(t, crashed, "k", 2)
	crashed.abandon()
	refused(t, live, "k", 2) // fresh leases: still counted
	testenv.EventuallyTrue(t, 10*time.Second, "the crashed instance's leases to expire", func() bool {
		_, ok := live.Acquire("k", 2)
		return ok
	})
	mustAcquire(t, live, "k", 2)
	refused(t, live, "k", 2)
}

// TestHeartbeatExtendsLeases: a refresh moves every held lease's expiry to
// now + TTL, and takes out again a lease released while it ran.
func TestHeartbeatExtendsLeases(t *testing.T) {
	client, prefix := testenv.Redis(t)
	s := newStore(t, Config{Client: client, Prefix: prefix, TTL: time.Hour})
	ctx := context.Background()
	var held []Lease
	for i := range 3 {
		held = append(held, mustAcquire(t, s, "k"+strconv.Itoa(i%2), 10))
	}
	for _, l := range held { // as if about to expire
		client.ZAdd(ctx, l.set, redis.Z{Score: 1, Member: l.member})
	}
	if err := s.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	now, err := client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range held {
		score, err := client.ZScore(ctx, l.set, l.member).Result()
		if err != nil {
			t.Fatal(err)
		}
		if exp := time.UnixMilli(int64(score)); exp.Before(now.Add(59*time.Minute)) || exp.After(now.Add(61*time.Minute)) {
			t.Fatalf("lease %s expires at %v, want about an hour after %v", l.member, exp, now)
		}
	}

	// a release whose ZREM ran before a refresh that had already read it
	snapshot := map[string][]string{held[0].set: {held[0].member}}
	s.Release(held[0])
	client.ZAdd(ctx, held[0].set, redis.Z{Score: 1e15, Member: held[0].member})
	if err := s.removeReleased(ctx, snapshot); err != nil {
		t.Fatal(err)
	}
	if err := client.ZScore(ctx, held[0].set, held[0].member).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the released lease is still in Redis: %v", err)
	}
}

// TestRedisDownAdmitsOnTheLocalBound: with Redis gone Acquire admits within
// its timeout, counts the fallback and reports the error; once Redis is back
// (empty, as after a crash) the heartbeat writes the leases held, so the
// shared count is right again.
func TestRedisDownAdmitsOnTheLocalBound(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	var mu sync.Mutex
	var ops []string
	fallbacks := prometheus.NewCounter(prometheus.CounterOpts{Name: "fallbacks"})
	s := newStore(t, Config{Client: client, Prefix: "p:", TTL: time.Hour, Fallbacks: fallbacks,
		OnError: func(_ error, op string) { mu.Lock(); ops = append(ops, op); mu.Unlock() }})
	mustAcquire(t, s, "k", 2)
	srv.Kill()

	l := mustAcquire(t, s, "k", 2) // Redis gone: admitted
	mustAcquire(t, s, "k", 2)
	mu.Lock()
	if len(ops) == 0 || ops[0] != "acquire" {
		t.Errorf("errors reported for %v, want acquire", ops)
	}
	mu.Unlock()
	if got := value(t, fallbacks); got != 2 {
		t.Errorf("fallbacks %v, want 2", got)
	}
	s.Release(l)

	srv.Start()
	testenv.Eventually(t, 10*time.Second, "a heartbeat to reach the restarted Redis", func() error {
		return s.refresh(context.Background())
	})
	if got := card(t, srv.Client(), setKey("p:", "k")); got != 2 || s.Held() != 2 {
		t.Fatalf("after Redis came back: %d leases in Redis, %d held, want 2 and 2", got, s.Held())
	}
}

// TestHungRedisDoesNotHoldASubscribe: Redis that accepts and never answers
// costs a subscribe the call timeout, then admits it; a Release in the
// following second does not wait for Redis either.
func TestHungRedisDoesNotHoldASubscribe(t *testing.T) {
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	_, prefix := testenv.Redis(t)
	var causes []error
	var mu sync.Mutex
	s := newStore(t, Config{Client: client, Prefix: prefix, Timeout: 100 * time.Millisecond,
		OnError: func(err error, _ string) { mu.Lock(); causes = append(causes, err); mu.Unlock() }})
	mustAcquire(t, s, "k", 1)
	proxy.Stall()
	l := mustAcquire(t, s, "k", 1) // over the shared bound, but Redis cannot say so
	s.Release(l)
	mu.Lock()
	defer mu.Unlock()
	if len(causes) == 0 || redisconn.Cause(causes[0]) != redisconn.CauseTimeout {
		t.Fatalf("errors %v, want a deadline", causes)
	}
}

// TestCluster: a real 3-master Cluster, keys on different masters: the
// bound holds per key, the heartbeat's pipeline spans the masters, Close
// gives everything back.
func TestCluster(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3, 0)
	client := c.Client()
	a := newStore(t, Config{Client: client, TTL: time.Hour})
	b := newStore(t, Config{Client: client, TTL: time.Hour})
	keys := []string{"key_1", "key_2", "key_3", "key_{4}", "key_5", "key_6"}
	ranges := map[int]bool{}
	for _, k := range keys {
		ranges[c.RangeOf(t, setKey(DefaultPrefix, k))] = true
		mustAcquire(t, a, k, 2)
		mustAcquire(t, b, k, 2)
		refused(t, a, k, 2)
		refused(t, b, k, 2)
	}
	if len(ranges) < 2 {
		t.Fatalf("the keys landed on %d masters; pick keys that spread", len(ranges))
	}
	ctx := context.Background()
	if err := a.refresh(ctx); err != nil {
		t.Fatalf("refresh across masters: %v", err)
	}
	a.Close()
	for _, k := range keys {
		if got := card(t, client, setKey(DefaultPrefix, k)); got != 1 {
			t.Fatalf("%s holds %d leases after one instance closed, want 1", k, got)
		}
		mustAcquire(t, b, k, 2)
	}
	b.Close()
	for _, k := range keys {
		if got := card(t, client, setKey(DefaultPrefix, k)); got != 0 {
			t.Fatalf("%s holds %d leases after both closed", k, got)
		}
	}
}

func TestConfigRefusals(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	for name, cfg := range map[string]Config{
		"no client":         {},
		"brace prefix":      {Client: client, Prefix: "a{b}:"},
		"refresh after ttl": {Client: client, TTL: time.Second, Refresh: 2 * time.Second},
	} {
		if s, err := New(cfg); err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSetKey(t *testing.T) {
	for key, want := range map[string]string{
		"key_1": "p:subs:{key_1}", "": "p:subs:{%}", "a}b": "p:subs:{%a%7Db}", "%7D": "p:subs:{%%257D}",
	} {
		if got := setKey("p:", key); got != want {
			t.Errorf("setKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestMinimalACL: docs/redis.md's ACL lines for subscription slots (with
// the connection commands every module needs) are enough for every call:
// warm-up, acquire, refusal, refresh, release and close report no error.
func TestMinimalACL(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	ctx := context.Background()
	acl := []any{"ACL", "SETUSER", "civicgate", "on", ">pw", "resetkeys", "~civicgate:*", "resetchannels", "-@all",
		"+ping", "+hello", "+auth", "+select", "+evalsha", "+eval", "+script|load", "+time", "+pexpire",
		"+zadd", "+zrem", "+zcard", "+zremrangebyscore"}
	if err := srv.Client().Do(ctx, acl...).Err(); err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "civicgate", Password: "pw"})
	t.Cleanup(func() { _ = client.Close() })
	if err := redisconn.Warm(ctx, client, Scripts()...); err != nil {
		t.Fatalf("warm-up as the ACL user: %v", err)
	}
	var mu sync.Mutex
	var errs []error
	s := newStore(t, Config{Client: client, TTL: time.Hour,
		OnError: func(err error, _ string) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	l := mustAcquire(t, s, "k", 2)
	mustAcquire(t, s, "k", 2)
	refused(t, s, "k", 2)
	if err := s.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	s.Release(l)
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 0 {
		t.Fatalf("errors as the ACL user: %v", errs)
	}
	if n := card(t, srv.Client(), setKey(DefaultPrefix, "k")); n != 0 {
		t.Fatalf("%d leases left", n)
	}
}
