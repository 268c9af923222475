package persisted_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testenv"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
	"github.com/redis/go-redis/v9"
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
	c2, release2, err := persisted.RedisClient(url, persisted.WithPassword("other"), persisted.WithUsername("u"),
		persisted.WithTimeout(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if c1 == c2 {
		t.Fatal("a different password shares the client")
	}
	o := c2.(*redis.Client).Options()
	if o.Password != "other" || o.Username != "u" || o.ReadTimeout != 250*time.Millisecond || o.DialTimeout != 250*time.Millisecond {
		t.Fatalf("options not applied: user %q, read timeout %v", o.Username, o.ReadTimeout)
	}
}

func TestRedisClientPasswordFromURLAndTLS(t *testing.T) {
	c, release, err := persisted.RedisClient("rediss://user:s3cret@redis.invalid:6380/2")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	o := c.(*redis.Client).Options()
	if o.TLSConfig == nil || o.Password != "s3cret" || o.Username != "user" || o.DB != 2 || o.Addr != "redis.invalid:6380" {
		t.Fatalf("rediss URL options: tls %v user %q db %d addr %s", o.TLSConfig != nil, o.Username, o.DB, o.Addr)
	}
}

func TestRedisClientErrorsNeverShowThePassword(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", "persisted: redis URL is empty"},
		{"redis://user:s3cret@host:notaport/0", "persisted: redis URL does not parse"},
		{"http://user:s3cret@host/", `persisted: redis URL http://user:xxxxx@host/: scheme "http" is not redis, rediss or unix`},
		{"redis://user:s3cret@host:6379/abc", `persisted: redis URL redis://user:xxxxx@host:6379/abc: redis: invalid database number: "abc"`},
		{"redis://user:s3cret@host:6379/0?nope=1", `persisted: redis URL redis://user:xxxxx@host:6379/0?nope=1: redis: unexpected option: nope`},
	} {
		_, _, err := persisted.RedisClient(tc.url)
		if err == nil || err.Error() != tc.want {
			t.Errorf("RedisClient(%q) error = %v\nwant %s", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
	if _, _, err := persisted.RedisClient("redis://"+testenv.RedisAddr(), persisted.WithTimeout(-time.Second)); err == nil {
		t.Error("a negative timeout was accepted")
	}
}
