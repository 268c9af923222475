package store

import (
	"context"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
)

// BenchmarkReplicaRead is the cost of routing one read (Bill by id) on a local primary + streaming replica:
// no replicas configured (the primary), DATABASE_READ_CONSISTENCY=lag (the replica, no extra round trip) and
// feed (the replica after one change-feed lookup on the primary).
func BenchmarkReplicaRead(b *testing.B) {
	e := newReplicaEnv(b, 1)
	ctx := context.Background()
	codec, _ := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	lagOnly := manual
	lagOnly.LagOnly = true
	sLag, rLag := e.store(lagOnly)
	sFeed, rFeed := e.store(manual)
	rLag.CheckNow(ctx)
	rFeed.CheckNow(ctx)
	for _, c := range []struct {
		name string
		s    *Store
	}{{"primary-only", New(e.primary, codec)}, {"replica-lag", sLag}, {"replica-feed", sFeed}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if bill, err := c.s.Bill(ctx, "hr1-118"); err != nil || bill == nil {
					b.Fatalf("%v %v", bill, err)
				}
			}
		})
	}
	if st := rFeed.Stats(); st.Replicas[0].Reads == 0 || st.BehindFeed != 0 {
		b.Fatalf("feed reads did not go to the replica: %+v", st)
	}
}
