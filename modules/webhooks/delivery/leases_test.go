package delivery_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestTwoSidecarsDeliverEachAttemptOnce: two engines (real clock, their own
// loops) share the outbox; each attempt is made by exactly one of them, both
// work, and the attempts the receiver saw equal the attempts recorded.
func TestTwoSidecarsDeliverEachAttemptOnce(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	// Every 4th event fails its first attempt, so retries are shared too.
	rc.setAnswer(func(r *http.Request, n int) (int, http.Header) {
		time.Sleep(time.Millisecond) // a receiver that takes a moment
		if n == 0 && strings.HasSuffix(r.Header.Get("webhook-id"), "0") {
			return http.StatusBadGateway, nil
		}
		return http.StatusOK, nil
	})
	e.endpoint(rc.URL())
	e.endpoint(rc.URL(), "members")
	const events = 150
	e.db.Insert(t, "bills", events/2)
	e.db.Insert(t, "members", events/2)
	var counts [2]atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 2 {
		e.start(delivery.Config{Store: e.store, Client: dev.Client(5 * time.Second), Workers: 4, MaxInFlight: 6, MaxInFlightPerOrg: 3,
			Batch: 20, Poll: 5 * time.Millisecond, Schedule: []time.Duration{0, 50 * time.Millisecond, 50 * time.Millisecond},
			Metrics: countDeliveries{&counts[i]}}, stop, &wg)
	}
	want := events + events/2 // ep1 gets all, ep2 the members
	testenv.Eventually(t, 60*time.Second, "every delivery", func() error {
		var done int
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM civicgate.webhook_deliveries WHERE status = 'delivered'`).Scan(&done); err != nil {
			return err
		}
		if done != want {
			return fmt.Errorf("%d of %d delivered", done, want)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	var attempts int
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT sum(attempts) FROM civicgate.webhook_deliveries`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	reqs := rc.requests()
	if len(reqs) != attempts {
		t.Fatalf("receiver saw %d requests, %d attempts were recorded: an attempt was made twice", len(reqs), attempts)
	}
	// Per delivery: requests received = attempts recorded.
	sent := map[string]int{}
	for _, q := range reqs {
		sent[q.header.Get("webhook-id")+" "+q.header.Get("User-Agent")]++
	}
	rows, err := e.db.Pool.Query(e.ctx, `SELECT d.event_id::text, d.attempts FROM civicgate.webhook_deliveries d`)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		recorded[id+" civicgate-webhooks/1"] += n
	}
	rows.Close()
	for k, n := range sent {
		if recorded[k] != n {
			t.Fatalf("%s: %d requests, %d attempts recorded", k, n, recorded[k])
		}
	}
	ok := rc.succeeded()
	if len(ok) != events {
		t.Fatalf("%d distinct events delivered, want %d", len(ok), events)
	}
	if counts[0].Load() == 0 || counts[1].Load() == 0 || counts[0].Load()+counts[1].Load() != int64(attempts) {
		t.Fatalf("attempts per instance %d + %d, recorded %d", counts[0].Load(), counts[1].Load(), attempts)
	}
}

type countDeliveries struct{ n *atomic.Int64 }

func (c countDeliveries) Delivery(string) { c.n.Add(1) }

func (c countDeliveries) Attempt(string, time.Duration) {}

func (c countDeliveries) Lag(int64, time.Duration) {}

func (c countDeliveries) SetAside(string) {}

// TestInFlightBoundedPerEndpoint: with max_in_flight 2, two engines with 8
// workers each never have more than 2 requests open at one receiver.
func TestInFlightBoundedPerEndpoint(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	release := rc.holdAll()
	e.endpoint(rc.URL())
	e.db.Insert(t, "bills", 12)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		e.start(delivery.Config{Store: e.store, Client: dev.Client(5 * time.Second), Workers: 8, MaxInFlight: 2, Poll: 5 * time.Millisecond}, stop, &wg)
	}
	testenv.EventuallyTrue(t, 30*time.Second, "two attempts to be held", func() bool { rc.mu.Lock(); defer rc.mu.Unlock(); return rc.inside == 2 })
	// Both engines keep polling; give them many polls to overstep the bound.
	var inflight int
	for range 20 {
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM civicgate.webhook_deliveries WHERE status = 'delivering'`).Scan(&inflight); err != nil {
			t.Fatal(err)
		}
		if inflight > 2 {
			t.Fatalf("%d deliveries leased at once", inflight)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	testenv.EventuallyTrue(t, 30*time.Second, "the 12 deliveries", func() bool { return len(rc.succeeded()) == 12 })
	close(stop)
	wg.Wait()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.peak != 2 {
		t.Fatalf("peak concurrent requests %d, want 2", rc.peak)
	}
}

// TestDeliveriesContinueWhileAWriterHoldsTheFeed: a writer in the middle of a
// long transaction (holding the feed lock) delays only the fan-out of its own
// events, never the delivery of work already fanned out.
func TestDeliveriesContinueWhileAWriterHoldsTheFeed(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	e.endpoint(rc.URL())
	e.db.Insert(t, "bills", 1)
	if _, err := e.store.FanOut(e.ctx, e.clock.Now(), 100, feedtest.Tiers()); err != nil {
		t.Fatal(err)
	}
	tx, err := e.db.Pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	if _, err := feedtest.InsertTx(e.ctx, tx, "members", 1); err != nil {
		t.Fatal(err)
	}
	d, err := delivery.New(delivery.Config{Store: e.store, Client: dev.Client(5 * time.Second), Poll: 10 * time.Millisecond, Tiers: feedtest.Tiers()})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	ctx, cancel := contextUntil(e, stop)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	testenv.EventuallyTrue(t, 30*time.Second, "the delivery made while the writer holds the lock", func() bool { return len(rc.succeeded()) == 1 }) // delivered while the writer holds the lock
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyTrue(t, 30*time.Second, "the writer's event once it commits", func() bool { return len(rc.succeeded()) == 2 }) // and the writer's event once it commits
	close(stop)
	<-done
}

// TestOutcomeRecordedAcrossADatabaseBlip: PostgreSQL goes away while the
// receiver is answering; the engine keeps trying to record the answer and
// does so once the database is back, so the delivery is not sent again when
// its lease would have run out.
func TestOutcomeRecordedAcrossADatabaseBlip(t *testing.T) {
	e := newEnv(t)
	proxy := testenv.NewProxy(t, "127.0.0.1:5432")
	u, err := url.Parse(e.db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr()
	pool, err := pgxpool.New(e.ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	box, _ := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	viaProxy := store.New(pool, box)

	rc := newReceiver(t)
	restored := make(chan struct{})
	rc.setAnswer(func(*http.Request, int) (int, http.Header) {
		proxy.Cut() // the database disappears while the receiver answers
		go func() {
			time.Sleep(300 * time.Millisecond) // an outage of a fixed length, not a race
			proxy.Restore()
			close(restored)
		}()
		return http.StatusOK, nil
	})
	ep, _ := e.endpoint(rc.URL())
	e.db.Insert(t, "bills", 1)
	d, err := delivery.New(delivery.Config{Store: viaProxy, Client: dev.Client(5 * time.Second), Clock: e.clock, Tiers: feedtest.Tiers()})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.RunOnce(e.ctx); err != nil || n != 1 {
		t.Fatalf("run: %d %v", n, err)
	}
	<-restored
	rows := e.deliveryRows(ep.ID)
	if len(rows) != 1 || rows[0].Status != "delivered" || rows[0].Attempts != 1 {
		t.Fatalf("after the blip: %+v (the answered attempt must be recorded)", rows)
	}
}

// TestLeaseRenewedWhileAnAttemptOutlastsIt: an attempt that takes longer than
// the lease keeps it (renewed every lease/3), so a second instance polling
// all along never sends it again; without renewals it would, after 600ms.
func TestLeaseRenewedWhileAnAttemptOutlastsIt(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	release := rc.holdAll()
	ep, _ := e.endpoint(rc.URL())
	e.db.Insert(t, "bills", 1)
	const lease = 600 * time.Millisecond
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cfg := delivery.Config{Store: e.store, Client: dev.Client(30 * time.Second), Timeout: 30 * time.Second, Lease: lease, Poll: 5 * time.Millisecond}
	e.start(cfg, stop, &wg)
	testenv.EventuallyTrue(t, 30*time.Second, "the attempt to be held", func() bool { rc.mu.Lock(); defer rc.mu.Unlock(); return rc.inside == 1 })
	var first time.Time
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT lease_until FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&first); err != nil {
		t.Fatal(err)
	}
	e.start(cfg, stop, &wg) // the second instance, polling every 5ms
	// Await renewals that carry the lease three leases past its first end.
	testenv.EventuallyTrue(t, 30*time.Second, "lease renewals three leases past its first end", func() bool {
		var until time.Time
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT lease_until FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&until); err != nil {
			t.Fatal(err)
		}
		return until.Sub(first) >= 3*lease
	})
	close(release)
	testenv.EventuallyTrue(t, 30*time.Second, "the held delivery", func() bool { return len(rc.succeeded()) == 1 })
	testenv.EventuallyTrue(t, 30*time.Second, "the delivery to be recorded as delivered", func() bool { r := e.deliveryRows(ep.ID); return len(r) == 1 && r[0].Status == "delivered" })
	close(stop)
	wg.Wait()
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("the receiver saw %d requests; the attempt was sent again while it ran", n)
	}
	if r := e.deliveryRows(ep.ID); r[0].Attempts != 1 {
		t.Fatalf("attempts %d, want 1", r[0].Attempts)
	}
}

// DefaultLease has passed, and not before.
// TestCrashedInstancesAttemptDueAfterTheDefaultLease: an attempt claimed by an
// instance that died (no renewals, no outcome) is sent again once
func TestCrashedInstancesAttemptDueAfterTheDefaultLease(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.endpoint(rc.URL())
	e.db.Insert(t, "bills", 1)
	d := e.dispatcher(dev, nil)
	if _, err := d.FanOut(e.ctx); err != nil {
		t.Fatal(err)
	}
	// The crashed instance: claimed, never renewed, never finished.
	claimed := e.clock.Now()
	jobs, err := e.store.Claim(e.ctx, claimed, store.ClaimParams{Lease: delivery.DefaultLease, MaxInFlight: 4, MaxInFlightPerOrg: 8, Limit: 1,
		Tiers: feedtest.Tiers()}, store.RenderEnvelope)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	e.clock.Set(claimed.Add(delivery.DefaultLease - time.Second))
	if n := e.runOnce(d); n != 0 {
		t.Fatalf("%d attempts while the crashed instance's lease still ran", n)
	}
	e.clock.Set(claimed.Add(delivery.DefaultLease))
	if n := e.runOnce(d); n != 1 {
		t.Fatalf("%d attempts once the lease ended, want 1", n)
	}
	if r := e.deliveryRows(ep.ID); len(r) != 1 || r[0].Status != "delivered" || r[0].Attempts != 2 {
		t.Fatalf("rows %+v", r)
	}
	if len(rc.succeeded()) != 1 {
		t.Fatalf("receiver: %d deliveries", len(rc.succeeded()))
	}
}

// TestNotifiedEventsFannedOutAtOnce: with polling an hour apart, events are
// delivered anyway, because their writer NOTIFYs contract.ChangeEventsChannel (as
// feedtest and the records backend's sync do): only the notification can
// have woken the fan-out. A second batch after the listening connection was
// killed is delivered too (it listens again).
func TestNotifiedEventsFannedOutAtOnce(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	e.endpoint(rc.URL())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	e.start(delivery.Config{Store: e.store, Client: dev.Client(5 * time.Second), Poll: time.Hour}, stop, &wg)
	listeners := func() int {
		var n int
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.EventuallyTrue(t, 30*time.Second, "the engine to listen", func() bool { return listeners() == 1 })
	e.db.Insert(t, "bills", 3)
	testenv.EventuallyTrue(t, 30*time.Second, "the 3 deliveries", func() bool { return len(rc.succeeded()) == 3 })

	// The listening connection dies; the engine listens again and, once it
	// does, looks for what it may have missed.
	if _, err := e.db.Pool.Exec(e.ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	e.db.Insert(t, "members", 2) // possibly while nobody listens
	testenv.EventuallyTrue(t, 30*time.Second, "the 2 events inserted while nobody listened", func() bool { return len(rc.succeeded()) == 5 })
	close(stop)
	wg.Wait()
}
