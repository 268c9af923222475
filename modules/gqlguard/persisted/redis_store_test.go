package persisted_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
	"github.com/redis/go-redis/v9"
)

// Two gateway instances (separate fronts) on one Redis prefix share
// registrations.
func TestRedisSharesDocumentsBetweenInstances(t *testing.T) {
	client, prefix := testenv.Redis(t)
	ctx := context.Background()
	a := persisted.NewRedis(client, prefix, time.Hour, persisted.NewMemory(10, 1<<20))
	b := persisted.NewRedis(client, prefix, time.Hour, persisted.NewMemory(10, 1<<20))
	h := put(t, a, "query Shared { a }")

	if st := b.Front().Stats(); st.Entries != 0 {
		t.Fatalf("b's front before Get: %+v", st)
	}
	q, ok, err := b.Get(ctx, h)
	if err != nil || !ok || q != "query Shared { a }" {
		t.Fatalf("b.Get = %q, %v, %v", q, ok, err)
	}
	if st := b.Front().Stats(); st.Entries != 1 {
		t.Fatalf("b's front after Get: %+v, want the document kept", st)
	}
	// A repeated hit is served by the front: it no longer needs the Redis key.
	if err := client.Del(ctx, b.Key(h)).Err(); err != nil {
		t.Fatal(err)
	}
	if q, ok, err := b.Get(ctx, h); err != nil || !ok || q != "query Shared { a }" {
		t.Fatalf("b.Get from the front = %q, %v, %v", q, ok, err)
	}
	if _, ok, err := b.Get(ctx, persisted.Sum("{ unknown }")); ok || err != nil {
		t.Fatalf("Get(unknown) = %v, %v; want not found, no error", ok, err)
	}
}

func TestRedisKeyAndTTL(t *testing.T) {
	client, prefix := testenv.Redis(t)
	ctx := context.Background()
	s := persisted.NewRedis(client, prefix, 90*time.Second, nil)
	h := put(t, s, "{ ttl }")
	key := s.Key(h)
	if want := prefix + "apq:" + h.String(); key != want {
		t.Fatalf("Key = %q, want %q", key, want)
	}
	if got, err := client.Get(ctx, key).Result(); err != nil || got != "{ ttl }" {
		t.Fatalf("GET %s = %q, %v", key, got, err)
	}
	ttl, err := client.TTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > 90*time.Second {
		t.Fatalf("TTL %s = %v, %v; want in (0, 90s]", key, ttl, err)
	}
}

func TestRedisDefaultTTL(t *testing.T) {
	client, prefix := testenv.Redis(t)
	s := persisted.NewRedis(client, prefix, 0, nil)
	h := put(t, s, "{ default }")
	ttl, err := client.TTL(context.Background(), s.Key(h)).Result()
	if err != nil || ttl <= persisted.DefaultRedisTTL-time.Minute || ttl > persisted.DefaultRedisTTL {
		t.Fatalf("TTL = %v, %v; want about %v", ttl, err, persisted.DefaultRedisTTL)
	}
}

// A value that does not hash to its key (written by something else) is never
// served.
func TestRedisRefusesACorruptEntry(t *testing.T) {
	client, prefix := testenv.Redis(t)
	ctx := context.Background()
	s := persisted.NewRedis(client, prefix, time.Hour, nil)
	h := persisted.Sum("{ genuine }")
	if err := client.Set(ctx, s.Key(h), "mutation { evil }", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	q, ok, err := s.Get(ctx, h)
	if !errors.Is(err, persisted.ErrCorruptEntry) || ok || q != "" {
		t.Fatalf("Get = %q, %v, %v; want ErrCorruptEntry", q, ok, err)
	}
	if want := "persisted: redis key " + s.Key(h) + ": stored document does not hash to its key"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

// With Redis gone, a lookup the front cannot answer is an error (not a
// panic, not "not found"), a registration fails, and what the front holds is
// still served.
func TestRedisDownIsAnError(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	s := persisted.NewRedis(client, "cgtest:down:", time.Hour, nil)
	kept := put(t, s, "{ kept }")
	srv.Kill()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	missing := persisted.Sum("{ missing }")
	q, ok, err := s.Get(ctx, missing)
	if err == nil || ok || q != "" {
		t.Fatalf("Get with Redis down = %q, %v, %v; want an error", q, ok, err)
	}
	if want := "persisted: redis get " + missing.String() + ": "; len(err.Error()) <= len(want) || err.Error()[:len(want)] != want {
		t.Fatalf("error %q, want it to start %q", err, want)
	}
	if err := s.Put(ctx, missing, "{ missing }"); err == nil {
		t.Fatal("Put with Redis down succeeded")
	}
	if q, ok, err := s.Get(ctx, kept); err != nil || !ok || q != "{ kept }" {
		t.Fatalf("Get of a front-held document = %q, %v, %v", q, ok, err)
	}
}

func TestRedisFrontHitAllocatesNothing(t *testing.T) {
	client, prefix := testenv.Redis(t)
	s := persisted.NewRedis(client, prefix, time.Hour, nil)
	h := put(t, s, "{ hot }")
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { _, _, _ = s.Get(ctx, h) }); n != 0 {
		t.Fatalf("a front hit allocates %v times", n)
	}
}
