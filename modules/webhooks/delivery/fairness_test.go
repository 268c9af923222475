package delivery_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/webhooks/delivery"
)

// TestSlowOrganizationCannotStarveOthers: one organization's receivers (three
// endpoints, a backlog of older deliveries) hold every request until the test
// ends; with 4 workers and 4 in flight per endpoint, that organization never
// has more than max_in_flight_per_org (2) attempts in flight, and another
// organization's events, fanned out after the backlog, keep arriving round
// after round. The attempts' timeout (10 min) outlasts every wait of the
// test, so an engine that let the slow organization take every worker would
// deliver nothing more and fail the wait: no elapsed time is asserted.
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
	e.start(delivery.Config{Store: e.store, Client: dev.Client(10 * time.Minute), Timeout: 10 * time.Minute,
		Workers: 4, MaxInFlight: 4, MaxInFlightPerOrg: 2, Poll: 10 * time.Millisecond}, stop, &wg)
	defer func() {
		for _, r := range release {
			close(r)
		}
		close(stop)
		wg.Wait()
	}()
	testenv.EventuallyTrue(t, 30*time.Second, "the slow organization's two attempts to be held", func() bool { n, _ := held(); return n == 2 })

	for round := 1; round <= 3; round++ {
		e.db.Insert(t, "bills", 2)
		testenv.EventuallyTrue(t, time.Minute, fmt.Sprintf("round %d of the other organization's deliveries, behind the slow one", round),
			func() bool { return len(rcFast.succeeded()) == 2*round })
	}
	if n, peak := held(); n != 2 || peak > 2 {
		t.Fatalf("the slow organization has %d attempts in flight (peak %d), bound 2", n, peak)
	}
}
