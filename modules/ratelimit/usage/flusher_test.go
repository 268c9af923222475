package usage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// minuteSum is the sum of every minute row's counts.
func minuteSum(t *testing.T, ctx context.Context, pool *pgxpool.Pool) Delta {
	t.Helper()
	var d Delta
	err := pool.QueryRow(ctx, `SELECT coalesce(sum(admitted),0), coalesce(sum(refused),0), coalesce(sum(client_errors),0),
		coalesce(sum(server_errors),0), coalesce(sum(cost),0) FROM civicgate.usage_minute`).
		Scan(&d.Admitted, &d.Refused, &d.ClientErrors, &d.ServerErrors, &d.Cost)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFlusherWritesWithinAnInterval(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	m := NewMeter(0)
	f := NewFlusher(m, pool, 50*time.Millisecond, nil)
	f.Start()
	defer func() { _ = f.Stop(context.Background()) }()
	ctx := context.Background()
	m.Add("k", "o", time.Now(), Delta{Admitted: 2, Cost: 7})
	testenv.EventuallyTrue(t, 20*time.Second, "the first flush", func() bool { return minuteSum(t, ctx, pool) == Delta{Admitted: 2, Cost: 7} })
	m.Add("k", "o", time.Now(), Delta{Refused: 1})
	testenv.EventuallyTrue(t, 20*time.Second, "the second flush", func() bool { return minuteSum(t, ctx, pool) == Delta{Admitted: 2, Refused: 1, Cost: 7} })
	if m.Cells() != 0 {
		t.Fatalf("%d cells left after flushes", m.Cells())
	}
}

// TestFlusherKeepsCountsThroughAnOutage: with PostgreSQL cut off, flushes
// fail, the counts stay in the Meter (one warning for the whole outage) and
// are all written once the database is back.
func TestFlusherKeepsCountsThroughAnOutage(t *testing.T) {
	direct := migratedDB(t)
	dsn, proxy := proxied(t, direct)
	logger, logs := observed()
	m := NewMeter(0)
	f := NewFlusher(m, newPool(t, dsn), time.Hour, logger) // flushed by hand below
	pool := newPool(t, direct)                             // the test's reads bypass the proxy
	ctx := context.Background()

	var want Delta
	add := func(key string, d Delta) {
		m.Add(key, "o", time.Now(), d)
		want = want.Plus(d)
	}
	add("k1", Delta{Admitted: 1, Cost: 1})
	if err := f.FlushNow(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	for i := range 3 {
		add("k1", Delta{Admitted: 1, ServerErrors: 1})
		add("k2", Delta{Refused: int64(i + 1)})
		if err := f.FlushNow(ctx); err == nil {
			t.Fatal("flush succeeded with the database cut off")
		}
	}
	warns := logs.FilterMessageSnippet("flush to PostgreSQL failed").All()
	if len(warns) != 1 {
		t.Fatalf("%d failure logs for one outage, want 1: %v", len(warns), logs.All())
	}
	t.Logf("failure log: %v", warns[0].ContextMap())
	if e := warns[0].ContextMap()["error"].(string); strings.Contains(e, "user=") || strings.Contains(e, "database=") {
		t.Fatalf("failure log shows connection details: %q", e)
	}
	proxy.Restore()
	testenv.Eventually(t, 20*time.Second, "a flush after the outage", func() error { return f.FlushNow(ctx) })
	if got := minuteSum(t, ctx, pool); got != want {
		t.Fatalf("after the outage the tables hold %+v, want %+v", got, want)
	}
	if n := logs.FilterMessageSnippet("flush to PostgreSQL recovered").Len(); n != 1 {
		t.Fatalf("%d recovery logs, want 1", n)
	}
	// A second outage is logged again.
	proxy.Cut()
	add("k1", Delta{Admitted: 1})
	if f.FlushNow(ctx) == nil {
		t.Fatal("flush succeeded with the database cut off")
	}
	if n := logs.FilterMessageSnippet("flush to PostgreSQL failed").Len(); n != 2 {
		t.Fatalf("%d failure logs after two outages, want 2", n)
	}
}

// TestFlusherLostAcknowledgementCountsOnce: a flush whose commit landed but
// whose answer was lost (the connection dropped after COMMIT reached the
// server) fails, and the next flush writes the same batch under the same id:
// counted once, with the counts added meanwhile written too.
func TestFlusherLostAcknowledgementCountsOnce(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	logger, logs := observed()
	m := NewMeter(0)
	f := NewFlusher(m, pool, time.Hour, logger)
	lose := true
	f.write = func(ctx context.Context, pool *pgxpool.Pool, id string, b Batch) (bool, error) {
		applied, err := WriteFlush(ctx, pool, id, b)
		if err == nil && lose {
			lose = false
			return false, errors.New("read tcp 127.0.0.1:5432: connection reset by peer")
		}
		return applied, err
	}
	ctx := context.Background()
	m.Add("k", "o", time.Now(), Delta{Admitted: 3})
	if err := f.FlushNow(ctx); err == nil {
		t.Fatal("the flush whose answer was lost succeeded")
	}
	m.Add("k", "o", time.Now(), Delta{Admitted: 10})
	if err := f.FlushNow(ctx); err != nil {
		t.Fatal(err)
	}
	if got := minuteSum(t, ctx, pool).Admitted; got != 13 {
		t.Fatalf("admitted %d after a lost acknowledgement, want 13", got)
	}
	if logs.FilterMessageSnippet("flush to PostgreSQL failed").Len() != 1 || logs.FilterMessageSnippet("recovered").Len() != 1 {
		t.Fatalf("logs %v", logs.All())
	}
}

// TestFlusherLoopRecovers: the running loop, not FlushNow by hand, carries
// counts over an outage.
func TestFlusherLoopRecovers(t *testing.T) {
	direct := migratedDB(t)
	dsn, proxy := proxied(t, direct)
	logger, logs := observed()
	m := NewMeter(0)
	f := NewFlusher(m, newPool(t, dsn), 20*time.Millisecond, logger)
	pool := newPool(t, direct) // the test's reads bypass the proxy
	f.Start()
	ctx := context.Background()
	m.Add("k", "o", time.Now(), Delta{Admitted: 1})
	testenv.EventuallyTrue(t, 20*time.Second, "the first flush", func() bool { return minuteSum(t, ctx, pool).Admitted == 1 })
	proxy.Cut()
	m.Add("k", "o", time.Now(), Delta{Admitted: 10})
	testenv.EventuallyTrue(t, 20*time.Second, "a failed flush", func() bool { return logs.FilterMessageSnippet("flush to PostgreSQL failed").Len() > 0 })
	m.Add("k", "o", time.Now(), Delta{Admitted: 100})
	proxy.Restore()
	testenv.Eventually(t, 20*time.Second, "the counts of the outage", func() error {
		if got := minuteSum(t, ctx, pool).Admitted; got != 111 {
			return fmt.Errorf("admitted %d, want 111", got)
		}
		return nil
	})
	if err := f.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessageSnippet("flush to PostgreSQL failed").Len(); n != 1 {
		t.Fatalf("%d failure logs for one outage, want 1", n)
	}
}

func TestFlusherStopFlushes(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	m := NewMeter(0)
	f := NewFlusher(m, pool, time.Hour, nil)
	f.Start()
	m.Add("k", "o", time.Now(), Delta{Admitted: 5, ClientErrors: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := minuteSum(t, ctx, pool); got != (Delta{Admitted: 5, ClientErrors: 1}) {
		t.Fatalf("after Stop the tables hold %+v", got)
	}
	// Stop again, and Stop of a Flusher never started, only flush.
	m.Add("k", "o", time.Now(), Delta{Admitted: 1})
	if err := f.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	g := NewFlusher(m, pool, 0, nil)
	m.Add("k", "o", time.Now(), Delta{Admitted: 1})
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := minuteSum(t, ctx, pool).Admitted; got != 7 {
		t.Fatalf("admitted %d, want 7", got)
	}
}

func TestFlusherPrunesOnFirstFlush(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	old := Row{KeyID: "old", OrgID: "o", Start: time.Now().Add(-MinuteRetention - time.Hour), Delta: Delta{Admitted: 1}}
	if err := Write(context.Background(), pool, []Row{old}); err != nil {
		t.Fatal(err)
	}
	m := NewMeter(0)
	f := NewFlusher(m, pool, 20*time.Millisecond, nil)
	f.Start()
	defer func() { _ = f.Stop(context.Background()) }()
	m.Add("new", "o", time.Now(), Delta{Admitted: 1})
	testenv.EventuallyTrue(t, 20*time.Second, "the prune", func() bool {
		rows := tableRows(t, pool, minuteTable)
		return hasKey(rows, "new") && !hasKey(rows, "old")
	})
	if !hasKey(tableRows(t, pool, hourTable), "old") {
		t.Fatal("the hour row of a 49 h old minute was pruned")
	}
}

func hasKey(rows map[string]Row, key string) bool {
	for _, r := range rows {
		if r.KeyID == key {
			return true
		}
	}
	return false
}

func TestDescribeHidesConnectionDetails(t *testing.T) {
	dsn, proxy := proxied(t, migratedDB(t))
	proxy.Cut()
	_, err := pgx.Connect(context.Background(), dsn)
	if err == nil {
		t.Fatal("connected through a cut proxy")
	}
	d := describe(fmt.Errorf("usage: write 1 rows: %w", err))
	if !strings.HasPrefix(d, "cannot connect to PostgreSQL") || strings.Contains(d, "user=") || strings.Contains(d, "database=") || strings.Contains(d, "cgtest_") {
		t.Fatalf("describe(%q) = %q", err, d)
	}
}
