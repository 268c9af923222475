package export

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestOnlyClosedHoursAreSentOnce: hours are sent once their end plus the
// settle delay has passed, each once, and the cursor and the batch record
// say so.
func TestOnlyClosedHoursAreSentOnce(t *testing.T) {
	pool := migratedPool(t)
	writeHours(t, pool, []string{"k1", "k2"}, 0, 1, 2)
	sink := newReceiver(t, 0)
	e := newExporter(t, pool, sink.srv.URL, Config{Settle: 2 * time.Minute})
	ctx := context.Background()

	// at 15:01 hour 2 (14:00–15:00) is still settling
	now := h0.Add(3*time.Hour + time.Minute)
	drain(t, e, now, 5)
	ids := sink.acceptedIDs()
	if len(ids) != 4 || ids[EventID("k1", h0)] != 1 || ids[EventID("k2", h0.Add(time.Hour))] != 1 || ids[EventID("k1", h0.Add(2*time.Hour))] != 0 {
		t.Fatalf("at 15:01: %v", ids)
	}
	// at 15:02 it is closed
	drain(t, e, now.Add(time.Minute), 5)
	ids = sink.acceptedIDs()
	if len(ids) != 6 || ids[EventID("k2", h0.Add(2*time.Hour))] != 1 {
		t.Fatalf("at 15:02: %v", ids)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("%s sent %d times", id, n)
		}
	}
	var after time.Time
	var key string
	var batches int
	if err := pool.QueryRow(ctx, `SELECT after_start, after_key, (SELECT count(*) FROM civicgate.usage_export_batches)
		FROM civicgate.usage_export_cursors`).Scan(&after, &key, &batches); err != nil {
		t.Fatal(err)
	}
	if !after.Equal(h0.Add(2*time.Hour)) || key != "k2" || batches != 2 {
		t.Errorf("cursor (%s, %s), %d batches", after, key, batches)
	}
	// a run that finds nothing to send forgets batch records past BatchRetention
	if _, err := pool.Exec(ctx, `UPDATE civicgate.usage_export_batches SET delivered_at = $1 WHERE first_start = $2`,
		now.Add(-BatchRetention-time.Minute), h0); err != nil {
		t.Fatal(err)
	}
	if res, err := e.RunOnce(ctx, now.Add(time.Minute)); err != nil || res.Sent != 0 {
		t.Fatalf("caught-up run: %+v, %v", res, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM civicgate.usage_export_batches`).Scan(&batches); err != nil || batches != 1 {
		t.Errorf("%d batch records after the prune (%v), want 1", batches, err)
	}
}

// TestFailingSinkLosesNothing: a sink answering 503 three times, in batches
// of two, then 2xx, receives every closed hour; each attempt carries the
// same ids for the same hours; the failed attempts are counted.
func TestFailingSinkLosesNothing(t *testing.T) {
	pool := migratedPool(t)
	writeHours(t, pool, []string{"k1", "k2", "k3"}, 0, 1)
	sink := newReceiver(t, 3)
	m := NewMetrics()
	e := newExporter(t, pool, sink.srv.URL, Config{Batch: 2, Metrics: m})
	errs := drain(t, e, h0.Add(5*time.Hour), 20)
	if len(errs) != 3 {
		t.Fatalf("failed runs: %v", errs)
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), "503") {
			t.Errorf("error %v does not name the status", err)
		}
	}
	ids := sink.acceptedIDs()
	if len(ids) != 6 {
		t.Fatalf("accepted %v, want 6 events", ids)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("%s accepted %d times", id, n)
		}
	}
	// the three failed attempts were the same first batch, with the same ids
	first := sink.attempts[0]
	for _, a := range sink.attempts[1:4] {
		if len(a) != 2 || a[0].ID() != first[0].ID() || a[1].ID() != first[1].ID() {
			t.Errorf("retry carried %s %s, first %s %s", a[0].ID(), a[1].ID(), first[0].ID(), first[1].ID())
		}
	}
	if got := counterValue(t, m.Failures); got != 3 {
		t.Errorf("failed attempts = %v", got)
	}
	if got := counterValue(t, m.Events); got != 6 {
		t.Errorf("events = %v", got)
	}
	// at 17:00 every hour up to 16:00 is closed and exported: 16:00 is the
	// end of the last hour wholly exported
	if got := gaugeValue(t, m.Lag); got != time.Hour.Seconds() {
		t.Errorf("lag = %vs, want 3600", got)
	}
}

// TestLostCommitResendsTheSameIDs: the sink accepts a batch but the
// exporter's transaction dies before its commit (its backend terminated
// while the POST is in flight): the next run sends the same events again,
// same ids — the sink sees the duplicate by id — and the cursor moves once.
func TestLostCommitResendsTheSameIDs(t *testing.T) {
	pool := migratedPool(t)
	writeHours(t, pool, []string{"k1", "k2"}, 0)
	sink := newReceiver(t, 0)
	sink.hook = func(n int) {
		if n != 1 {
			return
		}
		// the exporter's connection, idle in its transaction during the POST;
		// the timeout makes pg_terminate_backend wait until it has ended
		var ended int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000))
			FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'
			AND pid <> pg_backend_pid()`).Scan(&ended)
		if err != nil || ended != 1 {
			t.Errorf("terminated %d backends: %v", ended, err)
		}
	}
	e := newExporter(t, pool, sink.srv.URL, Config{})
	errs := drain(t, e, h0.Add(2*time.Hour), 5)
	if len(errs) != 1 {
		t.Fatalf("runs failed: %v (want the one whose commit was lost)", errs)
	}
	ids := sink.acceptedIDs()
	if len(ids) != 2 || ids[EventID("k1", h0)] != 2 || ids[EventID("k2", h0)] != 2 {
		t.Fatalf("accepted %v: want both events twice, under the same ids", ids)
	}
}

// TestTwoExportersNeverSendConcurrently: while one gateway's batch is in
// flight, another's run finds the cursor locked and sends nothing; run
// side by side until caught up, they never have two batches in flight and
// every event is accepted once.
func TestTwoExportersNeverSendConcurrently(t *testing.T) {
	pool := migratedPool(t)
	writeHours(t, pool, []string{"k1", "k2", "k3", "k4", "k5"}, 0, 1, 2, 3)
	sink := newReceiver(t, 0)
	inPost, release := make(chan struct{}), make(chan struct{})
	sink.hook = func(n int) {
		if n == 1 {
			close(inPost)
			<-release
		}
	}
	a := newExporter(t, pool, sink.srv.URL, Config{Batch: 3})
	b := newExporter(t, pool, sink.srv.URL, Config{Batch: 3})
	now := h0.Add(10 * time.Hour)
	done := make(chan Result)
	go func() {
		res, err := a.RunOnce(context.Background(), now)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-inPost
	res, err := b.RunOnce(context.Background(), now)
	if err != nil || res.Leader || res.Sent != 0 {
		t.Fatalf("the second exporter ran while the first sent: %+v, %v", res, err)
	}
	close(release)
	if res := <-done; !res.Leader || res.Sent != 3 {
		t.Fatalf("first exporter: %+v", res)
	}

	sink.hook = nil
	var wg sync.WaitGroup
	for _, e := range []*Exporter{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				res, err := e.RunOnce(context.Background(), now)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Leader && res.Sent == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	ids := sink.acceptedIDs()
	if len(ids) != 20 {
		t.Fatalf("accepted %d events, want 20", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("%s accepted %d times", id, n)
		}
	}
	if sink.maxInFlight != 1 {
		t.Errorf("%d batches were in flight at once", sink.maxInFlight)
	}
}

// TestRunLogsOutageOnceWithoutSecrets: Run against a sink that fails, then
// recovers, logs one warning and one recovery, waits with growing backoff
// meanwhile, and no log line holds the URL's credentials or the header's
// value. The clock is the test's: no sleeping.
func TestRunLogsOutageOnceWithoutSecrets(t *testing.T) {
	pool := migratedPool(t)
	writeHours(t, pool, []string{"k1"}, 0)
	sink := newReceiver(t, 4)
	core, logs := observer.New(zap.DebugLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waits []time.Duration
	now := h0.Add(3 * time.Hour)
	url := strings.Replace(sink.srv.URL, "http://", "http://user:pa55word@", 1) + "/ingest?token=s3cr3t"
	e, err := New(Config{Pool: pool, Source: usageSource{pool}, Sink: &Sink{URL: url, Header: "Authorization", Value: "Bearer t0ken"},
		Logger: zap.New(core), Now: func() time.Time { return now },
		After: func(d time.Duration) <-chan time.Time {
			waits = append(waits, d)
			if d == DefaultInterval { // caught up after the recovery
				cancel()
			}
			ch := make(chan time.Time, 1)
			ch <- now
			return ch
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.Run(ctx)
	if len(waits) != 5 {
		t.Fatalf("waits %v: want four backoffs and the interval", waits)
	}
	for i, w := range waits[:4] {
		d := min(BackoffBase<<i, BackoffMax)
		if w < d/2 || w >= d {
			t.Errorf("backoff %d = %s, want [%s, %s)", i+1, w, d/2, d)
		}
	}
	if len(sink.acceptedIDs()) != 1 {
		t.Errorf("accepted %v", sink.acceptedIDs())
	}
	all := logs.All()
	if len(all) != 2 || all[0].Level != zap.WarnLevel || all[1].Level != zap.InfoLevel {
		t.Fatalf("logs: %v", all)
	}
	for _, l := range all {
		line := l.Message
		for k, v := range l.ContextMap() {
			line += " " + k + "=" + toString(v)
		}
		for _, secret := range []string{"pa55word", "s3cr3t", "t0ken", "try later", sink.srv.URL} {
			if strings.Contains(line, secret) {
				t.Errorf("log line holds %q: %s", secret, line)
			}
		}
	}
	if !strings.Contains(toString(all[0].ContextMap()["error"]), "503") {
		t.Errorf("the warning does not name the status: %v", all[0].ContextMap())
	}
}

// TestNewRefusesBadConfig: a settle below MinSettle and a batch beyond
// MaxBatch are refused, as is a missing sink.
func TestNewRefusesBadConfig(t *testing.T) {
	for name, c := range map[string]Config{
		"no sink":   {Pool: &pgxpool.Pool{}},
		"settle":    {Pool: &pgxpool.Pool{}, Source: usageSource{}, Sink: &Sink{URL: "http://x"}, Settle: time.Second},
		"big batch": {Pool: &pgxpool.Pool{}, Source: usageSource{}, Sink: &Sink{URL: "http://x"}, Batch: MaxBatch + 1},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
