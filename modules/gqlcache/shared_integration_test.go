package gqlcache

import (
	"fmt"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestSharedThroughCaddy: the Caddyfile's `shared redis` wires Redis in:
// a miss is stored there, and once the gateway's memory is emptied the
// same query is a shared hit, byte for byte.
func TestSharedThroughCaddy(t *testing.T) {
	dsn, _ := changeFeed(t)
	_, prefix := testenv.Redis(t)
	g := startGateway(t, fmt.Sprintf("invalidate postgres %s {\nfeed change_events\n}\nshared redis redis://%s/0 {\nkey_prefix %s\ntimeout 2s\n}",
		dsn, testenv.RedisAddr(), prefix), "")
	in := liveInstance(t)
	await(t, in, "the listener listens", in.up.Load)
	if in.shared == nil || in.shared.prefix != prefix {
		t.Fatal("shared redis not configured")
	}
	miss := g.query(t, q1, nil)
	if miss.cacheStatus != "civicgate; fwd=miss; stored" {
		t.Fatalf("miss: %+v", miss)
	}
	in.store.flush()
	hit := g.query(t, q1, nil)
	want := miss
	want.cacheStatus, want.age, want.outcome = "civicgate; hit; ttl=60; detail=shared", "0", "hit"
	wantAnswer(t, hit, want)
	if n := g.up.calls.Load(); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
	if status, body := g.purge(t, `{"tags":["bills"]}`); status != 200 {
		t.Fatalf("purge: %d %s", status, body)
	}
	if a := g.query(t, q1, nil); a.cacheStatus != "civicgate; fwd=miss; stored" {
		t.Fatalf("after a purge: %+v", a)
	}
}
