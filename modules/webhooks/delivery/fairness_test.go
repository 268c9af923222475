package delivery_test

import (
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/delivery"
)

// TestSlowOrganizationCannotStarveOthers: one organization's receivers (three
// endpoints, a backlog of older deliveries) hold every request; with 4
// workers, 4 in flight per endpoint and a 20 s timeout, that organization
// never has more than max_in_flight_per_org (2) attempts in flight, and
// another organization's events, fanned out after the backlog, keep arriving
// within 3 s (round after round) instead of waiting for the slow attempts'
// timeout.
func TestSlowOrganizationCannotStarveOthers(t *testing.T) {
	e := newEnv(t)
	fast := e.db.NewOrg(t, "fast", "paid")
	var slow []*receiver
	var release []chan struct{}
	for range 3 {
		rc := newReceiver(t)
		release = append(release, rc.holdAll())
		e.endpoint(rc.URL(), "members")
		slow = append(slow, rc)
	}
	held := func() (inside, peak int) {
		for _, rc := range slow {
			rc.mu.Lock()
			inside += rc.inside
			peak += rc.peak
			rc.mu.Unlock()
		}
		return inside, peak
	}
	e.db.Insert(t, "members", 10) // 30 deliveries of the slow organization
	rcFast := newReceiver(t)
	e.endpointOf(fast, rcFast.URL(), "bills")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	e.start(delivery.Config{Store: e.store, Client: dev.Client(20 * time.Second), Timeout: 20 * time.Second,
		Workers: 4, MaxInFlight: 4, MaxInFlightPerOrg: 2, Poll: 10 * time.Millisecond}, stop, &wg)
	defer func() {
		for _, r := range release {
			close(r)
		}
		close(stop)
		wg.Wait()
	}()
	waitFor(t, func() bool { n, _ := held(); return n == 2 })

	for round := 1; round <= 3; round++ {
		start := time.Now()
		e.db.Insert(t, "bills", 2)
		waitFor(t, func() bool { return len(rcFast.succeeded()) == 2*round })
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("round %d: the other organization's events took %s behind the slow organization", round, took)
		}
	}
	if n, peak := held(); n != 2 || peak > 2 {
		t.Fatalf("the slow organization has %d attempts in flight (peak %d), bound 2", n, peak)
	}
}
