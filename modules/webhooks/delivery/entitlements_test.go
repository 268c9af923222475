package delivery_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// failFirst makes rc answer 503 to the first attempt of every webhook-id and
// 200 afterwards, so every event leaves a retry pending.
func failFirst(rc *receiver) {
	rc.setAnswer(func(_ *http.Request, n int) (int, http.Header) {
		if n == 0 {
			return http.StatusServiceUnavailable, nil
		}
		return http.StatusOK, nil
	})
}

// statusCount counts endpoint's deliveries by "status:last_error".
func (e *env) statusCount(endpoint string) map[string]int {
	e.t.Helper()
	out := map[string]int{}
	for _, r := range e.deliveryRows(endpoint) {
		out[r.Status+":"+r.LastError]++
	}
	return out
}

// TestSuspensionStopsDeliveriesUntilResumed: once an organization is
// suspended (`civicgate keys suspend`), its pending retries reach its
// receiver no more and its new events are not fanned out, while another
// organization's deliveries keep arriving in the same rounds (so the
// assertion can fail); its deliveries are parked with the reason, and
// delivered once it is resumed.
func TestSuspensionStopsDeliveriesUntilResumed(t *testing.T) {
	e := newEnv(t)
	other := e.db.NewOrg(t, "other", "paid")
	rcA, rcB := newReceiver(t), newReceiver(t)
	failFirst(rcA)
	epA, _ := e.endpoint(rcA.URL(), "bills")
	e.endpointOf(other, rcB.URL(), "bills")
	d := e.dispatcher(dev, func(c *delivery.Config) { c.Rand = func() float64 { return 0.5 } })
	e.db.Insert(t, "bills", 2)
	e.drain(d)
	if len(rcA.requests()) != 2 || len(rcA.succeeded()) != 0 || len(rcB.succeeded()) != 2 {
		t.Fatalf("before: a saw %d (%d ok), b %d ok", len(rcA.requests()), len(rcA.succeeded()), len(rcB.succeeded()))
	}

	e.db.SetStatus(t, e.org, keystore.OrgSuspended)
	e.clock.Set(e.clock.Now().Add(time.Minute)) // a's retries are due
	e.db.Insert(t, "bills", 3)
	e.drain(d)
	if n := len(rcA.requests()); n != 2 {
		t.Fatalf("the suspended organization's receiver saw %d requests after the suspension", n-2)
	}
	if n := len(rcB.succeeded()); n != 5 {
		t.Fatalf("the other organization got %d of 5 events while a was suspended", n)
	}
	if got := e.statusCount(epA.ID); got["parked:organization suspended"] != 2 || len(got) != 1 {
		t.Fatalf("a's deliveries while suspended: %v (2 parked, none for the new events)", got)
	}
	e.clock.Set(e.clock.Now().Add(48 * time.Hour))
	e.drain(d)
	if n := len(rcA.requests()); n != 2 {
		t.Fatal("a parked delivery was sent")
	}

	e.db.SetStatus(t, e.org, keystore.OrgActive)
	rcA.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusOK, nil })
	e.drain(d)
	if got := rcA.succeeded(); len(got) != 2 {
		t.Fatalf("after resuming a got %d of its 2 parked deliveries", len(got))
	}
	if got := e.statusCount(epA.ID); got["delivered:"] != 2 || len(got) != 1 {
		t.Fatalf("a's deliveries after resuming: %v", got)
	}
	e.db.Insert(t, "bills", 1)
	e.drain(d)
	if len(rcA.succeeded()) != 3 {
		t.Fatal("a's new events are not delivered after resuming")
	}
}

// TestResumeTakesEffectOnNotify: a running engine polling only once an hour
// parks and resumes an organization's deliveries as soon as the key store
// says so: only its NOTIFY civicgate_auth can have woken the engine. (The
// engine also reconciles when it starts listening, so the first NOTIFY step
// parks a ping created after that: under an engine deaf to civicgate_auth,
// either the ping stays pending or the parked deliveries stay parked.)
func TestResumeTakesEffectOnNotify(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.endpoint(rc.URL(), "bills")
	e.db.Insert(t, "bills", 2)
	if _, err := e.store.FanOut(e.ctx, e.clock.Now(), 100, feedtest.Tiers()); err != nil {
		t.Fatal(err)
	}
	e.db.SetStatus(t, e.org, keystore.OrgSuspended)
	if _, err := e.store.Reconcile(e.ctx, e.clock.Now(), feedtest.Tiers()); err != nil {
		t.Fatal(err)
	}
	if got := e.statusCount(ep.ID); got["parked:organization suspended"] != 2 {
		t.Fatalf("before: %v", got)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	e.start(delivery.Config{Store: e.store, Client: dev.Client(5 * time.Second), Poll: time.Hour}, stop, &wg)
	defer func() { close(stop); wg.Wait() }()
	testenv.EventuallyTrue(t, 30*time.Second, "the engine to listen on both channels", func() bool { return listening(t, e) })
	if _, err := e.store.Test(e.ctx, time.Now(), e.org.ID, ep.ID, func(id string) ([]byte, error) {
		return []byte(`{"id":"` + id + `","type":"ping"}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	e.db.SetStatus(t, e.org, keystore.OrgSuspended) // NOTIFY again
	testenv.EventuallyTrue(t, 30*time.Second, "the ping to be parked", func() bool { return e.statusCount(ep.ID)["parked:organization suspended"] == 3 })
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("%d requests while suspended", n)
	}
	e.db.SetStatus(t, e.org, keystore.OrgActive)
	// Within a minute of an hour's poll: only the NOTIFY can have sent them.
	testenv.EventuallyTrue(t, time.Minute, "the parked deliveries to go out", func() bool { return len(rc.succeeded()) == 3 })
}

// listening reports whether an engine holds its LISTEN connection, with
// both channels listened to (civicgate_auth is the second).
func listening(t *testing.T, e *env) bool {
	var n int
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN "civicgate_auth"' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestDowngradeCancelsLostFamilies: an organization whose paid key is
// revoked and replaced by a free one keeps getting bills but no more
// lobbying_disclosures: pending lobbying retries are cancelled with the
// reason and never sent, new lobbying events are not fanned out. Another
// (paid) organization gets both families throughout, so the assertion can
// fail.
func TestDowngradeCancelsLostFamilies(t *testing.T) {
	e := newEnv(t)
	other := e.db.NewOrg(t, "other", "paid")
	rcA, rcB := newReceiver(t), newReceiver(t)
	failFirst(rcA)
	epA, _ := e.endpoint(rcA.URL(), "bills", "lobbying_disclosures")
	e.endpointOf(other, rcB.URL(), "bills", "lobbying_disclosures")
	d := e.dispatcher(dev, func(c *delivery.Config) { c.Rand = func() float64 { return 0.5 } })
	e.db.Insert(t, "bills", 1)
	e.db.Insert(t, "lobbying_disclosures", 2)
	e.drain(d)
	if len(rcA.requests()) != 3 || len(rcB.succeeded()) != 3 {
		t.Fatalf("before: a saw %d, b got %d", len(rcA.requests()), len(rcB.succeeded()))
	}

	// `civicgate keys issue --tier free`, then `civicgate keys revoke` the paid key.
	e.db.Issue(t, e.org, "free")
	e.db.Revoke(t, e.org.KeyID)
	rcA.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusOK, nil })
	e.clock.Set(e.clock.Now().Add(time.Minute))
	e.db.Insert(t, "lobbying_disclosures", 1)
	e.db.Insert(t, "bills", 1)
	e.drain(d)
	families := func(rc *receiver) map[string]int {
		out := map[string]int{}
		for _, q := range rc.requests() {
			if q.status < 300 {
				out[decodeEnvelope(t, q.body)["data"].(map[string]any)["family"].(string)]++
			}
		}
		return out
	}
	if got := families(rcA); got["bills"] != 2 || got["lobbying_disclosures"] != 0 {
		t.Fatalf("a after the downgrade got %v, want its 2 bills and no lobbying", got)
	}
	if n := len(rcA.requests()); n != 5 {
		t.Fatalf("a's receiver saw %d requests, want 3 + 2 bills", n)
	}
	if got := families(rcB); got["bills"] != 2 || got["lobbying_disclosures"] != 3 {
		t.Fatalf("b got %v", got)
	}
	if got := e.statusCount(epA.ID); got["cancelled:"+store.ReasonNotEntitled+"lobbying_disclosures"] != 2 ||
		got["delivered:"] != 2 || len(got) != 2 {
		t.Fatalf("a's deliveries: %v (2 lobbying cancelled, 2 bills delivered, no new lobbying)", got)
	}
	e.clock.Set(e.clock.Now().Add(72 * time.Hour))
	if n := e.drain(d); n != 0 {
		t.Fatalf("%d attempts after everything was settled", n)
	}
}
