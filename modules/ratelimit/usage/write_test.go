package usage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestWriteTwoGatewaysAdd: two gateways (two Meters, two pools) count the
// same keys and minutes and each flush twice, concurrently; the rows hold the
// sums, and each hour row is the sum of its minutes.
func TestWriteTwoGatewaysAdd(t *testing.T) {
	dsn := migratedDB(t)
	ctx := context.Background()
	// Minutes spread over two hours, three keys of two organizations.
	count := func(m *Meter) {
		for i := range 150 {
			at := t0.Add(time.Duration(i) * time.Minute).Add(17 * time.Second)
			m.Add(fmt.Sprintf("key_%d", i%3), fmt.Sprintf("org_%d", i%3%2), at,
				Delta{Admitted: 1, Refused: int64(i % 2), ClientErrors: 1, ServerErrors: int64(i % 5 / 4), Cost: int64(i), MCP: int64(i % 3)})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 2 { // gateways
		m, pool := NewMeter(0), newPool(t, dsn)
		wg.Go(func() {
			for range 2 { // flushes
				count(m)
				errs <- Write(ctx, pool, m.Drain())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	pool := newPool(t, dsn)
	minutes := tableRows(t, pool, minuteTable)
	if len(minutes) != 150 {
		t.Fatalf("%d minute rows, want 150", len(minutes))
	}
	for i := range 150 {
		start := t0.Add(time.Duration(i) * time.Minute)
		key := fmt.Sprintf("key_%d", i%3)
		got := minutes[key+" "+start.Format("2006-01-02T15:04")]
		want := Delta{Admitted: 4, Refused: 4 * int64(i%2), ClientErrors: 4, ServerErrors: 4 * int64(i%5/4), Cost: 4 * int64(i), MCP: 4 * int64(i%3)}
		if got.Delta != want || got.OrgID != fmt.Sprintf("org_%d", i%3%2) || !got.Start.Equal(start) {
			t.Fatalf("minute %d: %+v, want %+v", i, got, want)
		}
	}
	hours := tableRows(t, pool, hourTable)
	sums := map[string]Delta{}
	for _, r := range minutes {
		k := r.KeyID + " " + r.Start.Truncate(time.Hour).Format("2006-01-02T15:04")
		sums[k] = sums[k].Plus(r.Delta)
	}
	if len(hours) != len(sums) || len(hours) != 9 {
		t.Fatalf("%d hour rows, %d hours of minutes, want 9 (3 keys × 3 hours)", len(hours), len(sums))
	}
	for k, want := range sums {
		if hours[k].Delta != want {
			t.Fatalf("hour %s: %+v, want the sum of its minutes %+v", k, hours[k].Delta, want)
		}
	}
}

// TestWriteSumsDuplicateRows: rows of one key and minute in one call (not
// what Drain returns, but allowed) are summed, not refused by the upsert.
func TestWriteSumsDuplicateRows(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	r := Row{KeyID: "k", OrgID: "o", Start: t0.Add(5 * time.Second), Delta: Delta{Admitted: 1}}
	if err := Write(context.Background(), pool, []Row{r, r, r}); err != nil {
		t.Fatal(err)
	}
	if got := tableRows(t, pool, minuteTable)["k 2026-03-10T12:00"]; got.Admitted != 3 {
		t.Fatalf("minute row %+v, want admitted 3", got)
	}
	if err := Write(context.Background(), pool, nil); err != nil {
		t.Fatalf("empty write: %v", err)
	}
}

func TestWriteBatchesManyRows(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	m := NewMeter(0)
	const keys = 2*batchRows + 17
	for i := range keys {
		m.Add(fmt.Sprintf("key_%05d", i), "o", t0, Delta{Admitted: 1})
	}
	if err := Write(context.Background(), pool, m.Drain()); err != nil {
		t.Fatal(err)
	}
	var n, sum int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*), sum(admitted) FROM civicgate.usage_hour`).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != keys || sum != keys {
		t.Fatalf("hour rows %d summing %d, want %d", n, sum, keys)
	}
}

func TestWriteWithoutTablesSaysMigrate(t *testing.T) {
	pool := newPool(t, testenv.Postgres(t))
	err := Write(context.Background(), pool, []Row{{KeyID: "k", OrgID: "o", Start: t0, Delta: Delta{Admitted: 1}}})
	if !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("write before migrate: %v, want ErrNotMigrated", err)
	}
}

func TestPruneRemovesExactlyOldRows(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := t0
	ages := []time.Duration{
		0,
		47 * time.Hour,
		MinuteRetention,               // kept: not older than 48 h
		MinuteRetention + time.Minute, // minute row pruned
		89 * 24 * time.Hour,
		HourRetention,             // hour row kept
		HourRetention + time.Hour, // hour row pruned
	}
	var rows []Row
	for _, a := range ages {
		rows = append(rows, Row{KeyID: "k", OrgID: "o", Start: now.Add(-a), Delta: Delta{Admitted: 1}})
	}
	if err := Write(ctx, pool, rows); err != nil {
		t.Fatal(err)
	}
	if err := Prune(ctx, pool, now); err != nil {
		t.Fatal(err)
	}
	minutes, hours := tableRows(t, pool, minuteTable), tableRows(t, pool, hourTable)
	for _, a := range ages {
		k := "k " + now.Add(-a).Format("2006-01-02T15:04")
		if _, ok := minutes[k]; ok != (a <= MinuteRetention) {
			t.Errorf("minute row %s (age %s): present %v", k, a, ok)
		}
		h := "k " + now.Add(-a).Truncate(time.Hour).Format("2006-01-02T15:04")
		if _, ok := hours[h]; ok != (a <= HourRetention) {
			t.Errorf("hour row %s (age %s): present %v", h, a, ok)
		}
	}
	if len(minutes) != 3 || len(hours) != 6 {
		t.Fatalf("%d minute rows and %d hour rows left, want 3 and 6", len(minutes), len(hours))
	}
}

// TestWriteBatchAppliesAnIDOnce: a batch written again under its id (its
// first commit landed, the acknowledgement did not) adds nothing; another id
// adds; Prune forgets ids applied more than MinuteRetention ago.
func TestWriteBatchAppliesAnIDOnce(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	rows := []Row{{KeyID: "k", OrgID: "o", Start: t0, Delta: Delta{Admitted: 2, Cost: 5}}}
	id := NewBatchID()
	for i, wantApplied := range []bool{true, false} {
		applied, err := WriteBatch(ctx, pool, id, rows)
		if err != nil || applied != wantApplied {
			t.Fatalf("write %d of batch %s: applied %v (%v), want %v", i+1, id, applied, err, wantApplied)
		}
	}
	if got := minuteSum(t, ctx, pool); got != (Delta{Admitted: 2, Cost: 5}) {
		t.Fatalf("a batch written twice under one id: tables hold %+v", got)
	}
	if applied, err := WriteBatch(ctx, pool, NewBatchID(), rows); err != nil || !applied {
		t.Fatalf("another batch: applied %v (%v)", applied, err)
	}
	if got := minuteSum(t, ctx, pool).Admitted; got != 4 {
		t.Fatalf("after another batch: admitted %d, want 4", got)
	}
	if _, err := pool.Exec(ctx, `UPDATE civicgate.usage_flushes SET applied_at = now() - $1::interval WHERE id = $2`,
		(MinuteRetention + time.Minute).String(), id); err != nil {
		t.Fatal(err)
	}
	if err := Prune(ctx, pool, time.Now()); err != nil {
		t.Fatal(err)
	}
	var left []string
	rowsLeft, err := pool.Query(ctx, `SELECT id FROM civicgate.usage_flushes`)
	if err != nil {
		t.Fatal(err)
	}
	for rowsLeft.Next() {
		var s string
		if err := rowsLeft.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	if len(left) != 1 || left[0] == id {
		t.Fatalf("after the prune the ids %v are left, want only the recent one", left)
	}
}
