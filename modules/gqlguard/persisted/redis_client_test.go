package persisted_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// A reload provisions the new config before cleaning up the old one: the
// same URL gets the same client, and the client is closed only when the last
// holder releases it.
func TestRedisClientIsSharedUntilTheLastRelease(t *testing.T) {
	url := "redis://" + testenv.RedisAddr() + "/0?client_name=" + testenv.RandomSuffix(4)
	ctx := context.Background()
	c1, release1, err := persisted.RedisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	c2, release2, err := persisted.RedisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Fatal("the same URL got two clients")
	}
	if err := c1.Ping(ctx).Err(); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	release1()
	release1() // a second call is a no-op: it must not drop c2's reference
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Fatalf("Ping after the first release: %v", err)
	}
	release2()
	if err := c2.Ping(ctx).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Ping after the last release = %v, want ErrClosed", err)
	}
}

func TestRedisClientOptionsMakeADifferentClient(t *testing.T) {
	url := "redis://" + testenv.RedisAddr() + "/0?client_name=" + testenv.RandomSuffix(4)
	c1, release1, err := persisted.RedisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer release1()
	c2, release2, err := persisted.RedisClient(url, persisted.WithTimeout(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if c1 == c2 {
		t.Fatal("a different timeout shares the client")
	}
	o := c2.(*redis.Client).Options()
	if o.ReadTimeout != 250*time.Millisecond || o.DialTimeout != 250*time.Millisecond || !o.ContextTimeoutEnabled {
		t.Fatalf("options not applied: read timeout %v, dial timeout %v", o.ReadTimeout, o.DialTimeout)
	}
}

// TLS with a custom CA and an ACL user: from the URL, and from the block
// form (credentials given as options over a URL without them).
func TestRedisClientTLSAndACL(t *testing.T) {
	tl := testenv.StartRedisTLS(t)
	ctx := context.Background()
	c1, release1, err := persisted.RedisClient(tl.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer release1()
	o := c1.(*redis.Client).Options()
	if o.TLSConfig == nil || o.Username != tl.Username || o.Password != tl.Password {
		t.Fatalf("rediss URL options: tls %v user %q", o.TLSConfig != nil, o.Username)
	}
	a := persisted.NewRedis(c1, "apq-tls:", time.Hour, nil)
	h := put(t, a, "query OverTLS { a }")

	// the same connection written as a block shares the client …
	same, releaseSame, err := persisted.RedisClientFor(redisconn.Config{URL: "rediss://" + tl.Addr + "/0",
		TLS: &redisconn.TLS{CA: tl.CAFile}}, persisted.WithUsername(tl.Username), persisted.WithPassword(tl.Password))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseSame()
	if same != c1 {
		t.Fatal("the same connection in the block form got a client of its own")
	}
	// … and with another timeout connects on its own
	c2, release2, err := persisted.RedisClientFor(redisconn.Config{Addrs: []string{tl.Addr}, TLS: &redisconn.TLS{CA: tl.CAFile}},
		persisted.WithUsername(tl.Username), persisted.WithPassword(tl.Password), persisted.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if c1 == c2 {
		t.Fatal("two configurations share a client")
	}
	b := persisted.NewRedis(c2, "apq-tls:", time.Hour, nil)
	if q, ok, err := b.Get(ctx, h); err != nil || !ok || q != "query OverTLS { a }" {
		t.Fatalf("Get over TLS as the ACL user = %q, %v, %v", q, ok, err)
	}
}

func TestRedisClientErrorsNeverShowThePassword(t *testing.T) {
	for _, url := range []string{
		"redis://user:s3cret@host:notaport/0",
		"http://user:s3cret@host/",
		"redis://user:s3cret@host:6379/abc",
		"redis://user:s3cret@host:6379/0?nope=1",
		"redis://user:s3cret@[bad",
	} {
		_, _, err := persisted.RedisClient(url)
		if err == nil || !strings.HasPrefix(err.Error(), "persisted: redis") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("RedisClient(%q) error = %v; want a persisted: redis … error without the password", url, err)
		}
	}
	if _, _, err := persisted.RedisClient(""); err == nil || err.Error() != "persisted: redis URL is empty" {
		t.Errorf("an empty URL: %v", err)
	}
	if _, _, err := persisted.RedisClient("redis://"+testenv.RedisAddr(), persisted.WithTimeout(-time.Second)); err == nil {
		t.Error("a negative timeout was accepted")
	}
}

// Every failed call is counted by cause through the Reporter (not a
// missing key), and a failure is still the caller's error.
func TestRedisClientReportsErrors(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	reg := prometheus.NewRegistry()
	rep, err := redisconn.NewReporter(persisted.ReporterComponent, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, release, err := persisted.RedisClient(srv.URL(), persisted.WithReporter(rep), persisted.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	s := persisted.NewRedis(client, "apq-report:", time.Hour, nil)
	ctx := context.Background()
	if _, ok, err := s.Get(ctx, persisted.Sum("{ unknown }")); ok || err != nil {
		t.Fatalf("Get(unknown) = %v, %v", ok, err)
	}
	if n := reportedErrors(t, reg, "refused"); n != 0 {
		t.Fatalf("%v errors reported with Redis up", n)
	}
	srv.Kill()
	if err := s.Put(ctx, persisted.Sum("{ q }"), "{ q }"); err == nil {
		t.Fatal("Put with Redis down succeeded")
	}
	if n := reportedErrors(t, reg, "refused"); n < 1 {
		t.Fatalf("%v refused errors reported, want at least 1", n)
	}
}

// reportedErrors is civicgate_redis_errors_total{component="persisted",cause}.
func reportedErrors(t *testing.T, reg *prometheus.Registry, cause string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != redisconn.ErrorsMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["component"] == persisted.ReporterComponent && labels["cause"] == cause {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
