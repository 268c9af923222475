package persisted_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testenv"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// On a 3-master Redis Cluster, documents registered through one gateway's
// client (their keys spread over every master) are found through another's.
func TestRedisSharesDocumentsOnACluster(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3, 0)
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
	for i := range 12 {
		q := fmt.Sprintf("query Q%d { a }", i)
		h := put(t, a, q)
		ranges[c.RangeOf(t, a.Key(h))] = true
		if got, ok, err := b.Get(ctx, h); err != nil || !ok || got != q {
			t.Fatalf("b.Get(%s) = %q, %v, %v", h, got, ok, err)
		}
	}
	if len(ranges) != 3 {
		t.Fatalf("12 documents landed on %d of 3 masters", len(ranges))
	}
}
