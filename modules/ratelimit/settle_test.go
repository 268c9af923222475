package ratelimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestSettledLeaseNeverInTheFuture: a lease settled with a last spend that
// would lie past Redis' now (spentAfter is measured from before the grant's
// round trip, so grant + spentAfter can pass now by that round trip) is
// restamped at now at the latest: the reset shown stays within the window.
// (A gateway on a Cluster showed t=61 on a 60 s window.)
func TestSettledLeaseNeverInTheFuture(t *testing.T) {
	client, prefix := testenv.Redis(t)
	w := time.Minute
	set := newPolicySet("t", "", []contract.Rate{{Quota: 100, Window: w}}, 0.05, 1000) // lease of 5
	keys := set.redisKeys(prefix, "k")
	ctx := context.Background()
	const id = 10
	d, _, err := redisTake(ctx, client, storeCall{keys: keys, set: set, need: 1, want: set.lease, ttl: set.leaseTTL,
		leaseID: strconv.FormatUint(id, 36)})
	if err != nil || d.granted != set.lease {
		t.Fatalf("lease: %+v %v", d, err)
	}
	var s settlements
	s.list[0] = settlement{id: id, unspent: 0, spentAfter: (30 * time.Second).Microseconds()} // "spent" 30 s after the grant: now at the latest
	s.n = 1
	d, _, err = redisTake(ctx, client, storeCall{keys: keys, set: set, need: 1, want: 1, settle: s})
	if err != nil || d.granted != 1 {
		t.Fatalf("settling take: %+v %v", d, err)
	}
	if d.resetAfter[0] > w.Microseconds() {
		t.Fatalf("reset %s after settling: past the %s window", time.Duration(d.resetAfter[0])*time.Microsecond, w)
	}
}
