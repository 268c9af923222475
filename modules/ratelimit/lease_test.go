package ratelimit

import (
	"testing"
	"time"
)

// TestLeasedUnitsBeforeARefusal: four requests of one instance renew a key
// at once near its quota; Redis leases the last units to the first and
// refuses the others. Whatever order the answers are recorded in, the
// instance spends the leased units before it refuses anyone (a burst of 100
// on a 100/min key once got 99 admitted and one 429 with a unit unspent).
func TestLeasedUnitsBeforeARefusal(t *testing.T) {
	const key = "k"
	ttl := time.Minute.Microseconds()
	lease := decision{granted: 2, n: 1, remaining: [maxRates]int64{0}, resetAfter: [maxRates]int64{ttl}}
	refusal := decision{retryAfter: 30 * time.Second.Microseconds(), n: 1, resetAfter: [maxRates]int64{ttl}}
	for _, order := range []string{"lease then refusal", "refusal then lease"} {
		t.Run(order, func(t *testing.T) {
			c := newLeaseCache(16)
			now := int64(1_000_000)
			if order == "lease then refusal" {
				c.record(key, now, 1, lease, 1, ttl)
				c.record(key, now+1, 1, refusal, 2, ttl)
			} else {
				c.record(key, now, 1, refusal, 2, ttl)
				c.record(key, now+1, 1, lease, 1, ttl)
			}
			// The refused round trip finds the leased unit.
			if d, ok := c.spend(key, now+2, 1); !ok || d.granted != 1 {
				t.Fatalf("spend after the refusal: %+v %v", d, ok)
			}
			// Spent: nothing more is granted locally — the cached refusal
			// stands, or (a lease recorded after it lifted it) Redis decides.
			d, _, ok := c.take(key, now+3, 1)
			if ok && (d.granted != 0 || d.retryAfter <= 0) {
				t.Fatalf("take with the lease spent: %+v, want the cached refusal or a round trip", d)
			}
			if order == "lease then refusal" && !ok {
				t.Fatal("the refusal recorded last was not cached")
			}
			if _, ok := c.spend(key, now+4, 1); ok {
				t.Fatal("spent a unit no lease holds")
			}
		})
	}
	// A lease recorded before a refusal is spent by take itself.
	c := newLeaseCache(16)
	c.record(key, 0, 1, lease, 1, ttl)
	c.record(key, 1, 1, refusal, 2, ttl)
	if d, _, ok := c.take(key, 2, 1); !ok || d.granted != 1 {
		t.Fatalf("take with a leased unit and a cached refusal: %+v %v", d, ok)
	}
}
