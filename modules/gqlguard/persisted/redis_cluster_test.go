package persisted_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// On a 3-master Redis Cluster, documents registered through one gateway's
// client (their keys spread over every master) are found through another's;
// when a master is killed and its replica takes over, its documents are
// found again and new ones registered (the clients reload the slot map on
// the dead node's errors, not a minute later).
func TestRedisSharesDocumentsOnACluster(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3, 1)
	ctx := context.Background()
	// two configurations, so two cluster clients, as two gateways have
	ca, releaseA, err := persisted.RedisClient(c.URL(), persisted.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseA()
	cb, releaseB, err := persisted.RedisClient(c.URL(), persisted.WithTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if ca == cb {
		t.Fatal("two configurations share a client")
	}
	a := persisted.NewRedis(ca, "apq-cluster:", time.Hour, nil)
	b := persisted.NewRedis(cb, "apq-cluster:", time.Hour, nil)
	ranges := map[int]bool{}
	var first persisted.Hash // a document in the first master's slots
	for i := range 12 {
		q := fmt.Sprintf("query Q%d { a }", i)
		h := put(t, a, q)
		r := c.RangeOf(t, a.Key(h))
		if r == 0 && !ranges[0] {
			first = h
		}
		ranges[r] = true
		if got, ok, err := b.Get(ctx, h); err != nil || !ok || got != q {
			t.Fatalf("b.Get(%s) = %q, %v, %v", h, got, ok, err)
		}
	}
	if len(ranges) != 3 {
		t.Fatalf("12 documents landed on %d of 3 masters", len(ranges))
	}

	// b's front would answer without Redis: a third client, fresh front
	cc, releaseC, err := persisted.RedisClient(c.URL(), persisted.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseC()
	fresh := func() *persisted.Redis { return persisted.NewRedis(cc, "apq-cluster:", time.Hour, nil) }
	if _, ok, err := fresh().Get(ctx, first); !ok || err != nil {
		t.Fatalf("before the kill: %v, %v", ok, err)
	}
	c.KillMaster(t, 0)
	c.WaitHealthy(t)
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		q := fmt.Sprintf("query After%d { a }", i)
		h := persisted.Sum(q)
		if c.RangeOf(t, a.Key(h)) != 0 {
			continue
		}
		_, found, err := fresh().Get(ctx, first) // replicated before the kill, or lost with it: either, no error
		if err == nil && a.Put(ctx, h, q) == nil {
			if got, ok, err := fresh().Get(ctx, h); err == nil && ok && got == q {
				t.Logf("after the failover: the old document found %v; a new one registered and found", found)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failed-over slots still fail 15s after the cluster is healthy: %v", err)
		}
	}
}
