package delivery_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/egress"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestSignedDeliveryVerifiedByStandardWebhooksLibrary: every delivery is
// accepted by the official verifier with the secret shown at creation, and
// carries the envelope of docs/design.md D14.
func TestSignedDeliveryVerifiedByStandardWebhooksLibrary(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, secret := e.endpoint(rc.URL(), "bills")
	ids := e.db.Insert(t, "bills", 3)
	e.db.Insert(t, "members", 2) // not subscribed
	if n := e.drain(e.dispatcher(dev, nil)); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	reqs := rc.requests()
	if len(reqs) != 3 {
		t.Fatalf("receiver got %d requests", len(reqs))
	}
	cursors := map[int64]bool{}
	for i, q := range reqs {
		if err := wh.Verify(q.body, q.header); err != nil {
			t.Fatalf("request %d refused by the Standard Webhooks verifier: %v", i, err)
		}
		if q.header.Get("X-Service-Signature") != q.header.Get("webhook-signature") || !strings.HasPrefix(q.header.Get("webhook-signature"), "v1,") {
			t.Fatalf("signature headers %v", q.header)
		}
		env := decodeEnvelope(t, q.body)
		if env["id"] != q.header.Get("webhook-id") || env["type"] != "bills.updated" {
			t.Fatalf("envelope %v", env)
		}
		seq, err := store.DecodeCursor(env["cursor"].(string))
		if err != nil || seq < ids[0] || seq > ids[2] || cursors[seq] {
			t.Fatalf("cursor %v → %d %v, want one of %v once", env["cursor"], seq, err, ids)
		}
		cursors[seq] = true
		data := env["data"].(map[string]any)
		if data["family"] != "bills" || data["record_id"] == "" || data["record"] == nil || data["changed_fields"].([]any)[0] != "title" {
			t.Fatalf("data %v", data)
		}
		if _, err := time.Parse(time.RFC3339Nano, env["occurred_at"].(string)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range e.deliveryRows(ep.ID) {
		if r.Status != "delivered" || r.Attempts != 1 || *r.LastCode != http.StatusNoContent {
			t.Fatalf("row %+v", r)
		}
	}
}

// TestRetryScheduleUnderFakeClock: a failing receiver is retried exactly at
// 5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h (± the injected jitter), never
// earlier, then the delivery is dead-lettered.
func TestRetryScheduleUnderFakeClock(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusInternalServerError, nil })
	ep, _ := e.endpoint(rc.URL())
	e.db.Insert(t, "bills", 1)
	var draws atomic.Int64
	// The jitter source walks 0, 0.125, …, so both ends of ±20 % are exercised.
	d := e.dispatcher(dev, func(c *delivery.Config) {
		c.Rand = func() float64 { return float64(draws.Add(1)-1) / 8 }
	})
	if n := e.runOnce(d); n != 1 {
		t.Fatalf("first attempt: %d", n)
	}
	for attempt := 1; attempt < len(delivery.Schedule()); attempt++ {
		rows := e.deliveryRows(ep.ID)
		if len(rows) != 1 || rows[0].Status != "pending" || rows[0].Attempts != attempt || *rows[0].LastCode != 500 {
			t.Fatalf("after attempt %d: %+v", attempt, rows)
		}
		r := float64(attempt-1) / 8
		want := time.Duration(float64(delivery.Schedule()[attempt]) * (0.8 + 0.4*r))
		got := rows[0].NextAttemptAt.Sub(e.clock.Now())
		if diff := got - want; diff < -time.Millisecond || diff > time.Millisecond {
			t.Fatalf("delay after attempt %d: %s, want %s (base %s)", attempt, got, want, delivery.Schedule()[attempt])
		}
		if got < time.Duration(float64(delivery.Schedule()[attempt])*0.8)-time.Millisecond || got > time.Duration(float64(delivery.Schedule()[attempt])*1.2)+time.Millisecond {
			t.Fatalf("delay %s outside ±20%% of %s", got, delivery.Schedule()[attempt])
		}
		// Not a moment early.
		e.clock.Set(rows[0].NextAttemptAt.Add(-time.Millisecond))
		if n := e.runOnce(d); n != 0 {
			t.Fatalf("attempt %d made early", attempt+1)
		}
		e.clock.Set(rows[0].NextAttemptAt)
		if n := e.runOnce(d); n != 1 {
			t.Fatalf("attempt %d not made when due", attempt+1)
		}
	}
	rows := e.deliveryRows(ep.ID)
	if rows[0].Status != "failed" || rows[0].Attempts != len(delivery.Schedule()) {
		t.Fatalf("after the last attempt: %+v, want dead-lettered", rows[0])
	}
	e.clock.Set(e.clock.Now().Add(72 * time.Hour))
	if n := e.drain(d); n != 0 {
		t.Fatalf("a dead-lettered delivery was attempted again (%d)", n)
	}
	reqs := rc.requests()
	if len(reqs) != len(delivery.Schedule()) {
		t.Fatalf("receiver saw %d attempts, want %d", len(reqs), len(delivery.Schedule()))
	}
	for i, q := range reqs {
		if q.header.Get("webhook-id") != reqs[0].header.Get("webhook-id") {
			t.Fatal("webhook-id changed between attempts")
		}
		if i > 0 && q.header.Get("webhook-timestamp") == reqs[i-1].header.Get("webhook-timestamp") {
			t.Fatal("timestamp not refreshed between attempts")
		}
	}
}

// TestRetryAfterHonoured: a Retry-After longer than the schedule's delay
// (seconds or HTTP date) postpones the next attempt to it.
func TestRetryAfterHonoured(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.endpoint(rc.URL())
	d := e.dispatcher(dev, func(c *delivery.Config) { c.Rand = func() float64 { return 0.5 } })
	start := e.clock.Now()
	rc.setAnswer(func(*http.Request, int) (int, http.Header) {
		return http.StatusServiceUnavailable, http.Header{"Retry-After": {"3600"}}
	})
	e.db.Insert(t, "bills", 1)
	e.runOnce(d)
	if got := e.deliveryRows(ep.ID)[0].NextAttemptAt.Sub(start); got != time.Hour {
		t.Fatalf("Retry-After 3600: next attempt in %s", got)
	}
	rc.setAnswer(func(*http.Request, int) (int, http.Header) {
		return http.StatusTooManyRequests, http.Header{"Retry-After": {start.Add(2 * time.Hour).UTC().Format(http.TimeFormat)}}
	})
	e.clock.Set(start.Add(time.Hour))
	e.runOnce(d)
	if got := e.deliveryRows(ep.ID)[0].NextAttemptAt.Sub(start); got != 2*time.Hour {
		t.Fatalf("Retry-After date: next attempt at +%s, want +2h", got)
	}
	// A short Retry-After does not shorten the schedule (5 min after attempt 2).
	rc.setAnswer(func(*http.Request, int) (int, http.Header) {
		return http.StatusServiceUnavailable, http.Header{"Retry-After": {"1"}}
	})
	e.clock.Set(start.Add(2 * time.Hour))
	e.runOnce(d)
	if got := e.deliveryRows(ep.ID)[0].NextAttemptAt.Sub(e.clock.Now()); got != 30*time.Minute {
		t.Fatalf("short Retry-After: next attempt in %s, want the schedule's 30m", got)
	}
}

// Test410Disables: 410 Gone disables the endpoint at once: no retry, no new
// deliveries; a replay re-enables it.
func Test410Disables(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusGone, nil })
	ep, _ := e.endpoint(rc.URL())
	e.db.Insert(t, "bills", 2)
	d := e.dispatcher(dev, func(c *delivery.Config) { c.MaxInFlight = 1; c.Workers = 1 })
	e.runOnce(d)
	got, err := e.store.GetEndpoint(e.ctx, e.org.ID, ep.ID)
	if err != nil || got.Status != "disabled" || !strings.Contains(got.DisabledReason, "410") {
		t.Fatalf("endpoint after 410: %+v %v", got, err)
	}
	e.db.Insert(t, "bills", 3)
	e.clock.Set(e.clock.Now().Add(48 * time.Hour))
	if n := e.drain(d); n != 0 {
		t.Fatalf("%d attempts to a disabled endpoint", n)
	}
	if len(rc.requests()) != 1 {
		t.Fatalf("receiver saw %d requests after 410", len(rc.requests()))
	}
	rows := e.deliveryRows(ep.ID)
	if len(rows) != 2 || rows[0].Status != "failed" || rows[1].Status != "pending" {
		t.Fatalf("rows %+v (the 3 events after disabling must not be fanned out)", rows)
	}
	rc.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusOK, nil })
	if _, err := e.store.Replay(e.ctx, e.clock.Now(), e.org.ID, ep.ID, 0, 100, feedtest.EventFamilies()); err != nil {
		t.Fatal(err)
	}
	e.drain(d)
	if ok := rc.succeeded(); len(ok) != 5 {
		t.Fatalf("after replay %d events delivered, want 5", len(ok))
	}
}

// TestSSRFTargetsRefused: without the dev option, loopback receivers
// (literal or by name) and private addresses are refused at dial time: the
// receiver sees nothing and the delivery records why.
func TestSSRFTargetsRefused(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	port := rc.addr[strings.LastIndex(rc.addr, ":"):]
	targets := []string{rc.URL(), "http://localhost" + port + "/hook", "https://10.0.0.1/hook", "https://169.254.169.254/latest"}
	var eps []store.Endpoint
	for _, u := range targets {
		ep, _ := e.endpoint(u)
		eps = append(eps, ep)
	}
	e.db.Insert(t, "bills", 1)
	var refused atomic.Int64
	d := e.dispatcher(egress.Policy{}, func(c *delivery.Config) { c.Metrics = countRefused{&refused} })
	if n := e.drain(d); n != len(targets) {
		t.Fatalf("%d attempts", n)
	}
	if len(rc.requests()) != 0 {
		t.Fatal("the loopback receiver was reached without the dev option")
	}
	for i, ep := range eps {
		rows := e.deliveryRows(ep.ID)
		if len(rows) != 1 || rows[0].Status != "pending" || rows[0].LastError != delivery.CauseRefused || rows[0].LastCode != nil {
			t.Fatalf("%s: %+v", targets[i], rows)
		}
	}
	if refused.Load() != int64(len(targets)) {
		t.Fatalf("refused metric %d", refused.Load())
	}
	// Control: the same receiver with the dev option is reached.
	e.clock.Set(e.clock.Now().Add(time.Minute))
	e.drain(e.dispatcher(dev, nil))
	if len(rc.requests()) != 2 {
		t.Fatalf("with the dev option the loopback receiver saw %d requests, want 2 (literal and localhost)", len(rc.requests()))
	}
}

type countRefused struct{ n *atomic.Int64 }

func (c countRefused) Delivery(string) {}

func (c countRefused) Attempt(result string, _ time.Duration) {
	if result == "refused" {
		c.n.Add(1)
	}
}

func (c countRefused) Lag(int64, time.Duration) {}

func (c countRefused) SetAside(string) {}

// TestReceiverDownThenReplayExactlyOnce: a receiver that is down for a while
// (connection refused) misses events; after it is back, a replay from its
// last received cursor brings every event exactly once (count of distinct
// webhook-ids = events, no id twice), also after every retry has run out.
func TestReceiverDownThenReplayExactlyOnce(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, _ := e.endpoint(rc.URL())
	d := e.dispatcher(dev, nil)
	e.db.Insert(t, "bills", 5)
	e.drain(d)
	got := rc.requests()
	last := decodeEnvelope(t, got[len(got)-1].body)["cursor"].(string)
	addr := rc.addr
	rc.down()
	e.db.Insert(t, "members", 7)
	e.db.Insert(t, "bills", 8)
	// Down across three attempts of each (0s, 5s, 5m later), and for good
	// measure until some are dead-lettered: skip ahead 3 days in steps.
	for _, step := range []time.Duration{0, 6 * time.Second, 6 * time.Minute} {
		e.clock.Set(e.clock.Now().Add(step))
		e.drain(d)
	}
	if n := len(rc.succeeded()); n != 5 {
		t.Fatalf("%d delivered while down", n)
	}
	rc.up(addr)
	res, err := e.store.Replay(e.ctx, e.clock.Now(), e.org.ID, ep.ID, mustCursor(t, last), 1000, feedtest.EventFamilies())
	if err != nil || res.Scheduled != 15 || res.More {
		t.Fatalf("replay: %+v %v", res, err)
	}
	e.drain(d)
	for range 20 { // every later retry time passes: nothing is sent twice
		e.clock.Set(e.clock.Now().Add(6 * time.Hour))
		e.drain(d)
	}
	ok := rc.succeeded()
	if len(ok) != 20 {
		t.Fatalf("distinct webhook-ids delivered: %d, want 20 events", len(ok))
	}
	for id, n := range ok {
		if n != 1 {
			t.Fatalf("webhook-id %s delivered %d times", id, n)
		}
	}
}

func mustCursor(t *testing.T, c string) int64 {
	n, err := store.DecodeCursor(c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSecretRotationOverlap: after a rotation deliveries carry two
// signatures (old and new secret both verify) for 24 h, then only the new.
func TestSecretRotationOverlap(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	ep, oldSecret := e.endpoint(rc.URL())
	newSecret, err := e.store.RotateSecret(e.ctx, e.clock.Now(), e.org.ID, ep.ID, 24*time.Hour)
	if err != nil || newSecret == oldSecret {
		t.Fatal(err)
	}
	d := e.dispatcher(dev, nil)
	e.db.Insert(t, "bills", 1)
	e.drain(d)
	oldWH, _ := standardwebhooks.NewWebhook(oldSecret)
	newWH, _ := standardwebhooks.NewWebhook(newSecret)
	q := rc.requests()[0]
	if n := len(strings.Fields(q.header.Get("webhook-signature"))); n != 2 {
		t.Fatalf("%d signatures during the overlap", n)
	}
	if oldWH.Verify(q.body, q.header) != nil || newWH.Verify(q.body, q.header) != nil {
		t.Fatal("during the overlap both secrets must verify")
	}
	e.clock.Set(e.clock.Now().Add(24*time.Hour + time.Second))
	e.db.Insert(t, "bills", 1)
	e.drain(d)
	q = rc.requests()[1]
	if n := len(strings.Fields(q.header.Get("webhook-signature"))); n != 1 {
		t.Fatalf("%d signatures after the overlap", n)
	}
	// The clock is a day ahead of the library's, so ignore the timestamp window here.
	if newWH.VerifyIgnoringTimestamp(q.body, q.header) != nil {
		t.Fatal("new secret refused after the overlap")
	}
	if oldWH.VerifyIgnoringTimestamp(q.body, q.header) == nil {
		t.Fatal("old secret still verifies after the overlap")
	}
	if ts, _ := strconv.ParseInt(q.header.Get("webhook-timestamp"), 10, 64); ts != e.clock.Now().Unix() {
		t.Fatalf("timestamp %d, clock %d", ts, e.clock.Now().Unix())
	}
}

// TestPingIsTriedOnce: a test delivery gets one attempt, no retries.
func TestPingIsTriedOnce(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.setAnswer(func(*http.Request, int) (int, http.Header) { return http.StatusInternalServerError, nil })
	ep, secret := e.endpoint(rc.URL())
	id, err := e.store.Test(e.ctx, e.clock.Now(), e.org.ID, ep.ID, func(id string) ([]byte, error) {
		return []byte(`{"id":"` + id + `","type":"ping"}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := e.dispatcher(dev, nil)
	e.drain(d)
	e.clock.Set(e.clock.Now().Add(time.Hour))
	e.drain(d)
	reqs := rc.requests()
	if len(reqs) != 1 || reqs[0].header.Get("webhook-id") != id {
		t.Fatalf("%d ping requests", len(reqs))
	}
	wh, _ := standardwebhooks.NewWebhook(secret)
	if err := wh.Verify(reqs[0].body, reqs[0].header); err != nil {
		t.Fatal(err)
	}
	if rows := e.deliveryRows(ep.ID); rows[0].Status != "failed" || rows[0].Attempts != 1 {
		t.Fatalf("%+v", rows)
	}
}
