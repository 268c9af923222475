package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/contract"
)

// operationHours reads civicgate.usage_operation_hour keyed "key hash hour".
func operationHours(t *testing.T, pool *pgxpool.Pool) map[string]OperationRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT key_id, org_id, start, op_hash, op_type, op_name, requests, errors, cost,
		latency_buckets, last_seen FROM civicgate.usage_operation_hour`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]OperationRow{}
	for rows.Next() {
		var r OperationRow
		var buckets []int64
		if err := rows.Scan(&r.KeyID, &r.OrgID, &r.Start, &r.Hash, &r.Type, &r.Name, &r.Requests, &r.Errors, &r.Cost, &buckets, &r.LastSeen); err != nil {
			t.Fatal(err)
		}
		if len(buckets) != LatencyBuckets {
			t.Fatalf("%d latency buckets, want %d", len(buckets), LatencyBuckets)
		}
		copy(r.Latency[:], buckets)
		out[r.KeyID+" "+r.Hash[max(len(r.Hash)-8, 0):]+" "+r.Start.UTC().Format("15")] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriteOperationsTwoGatewaysAdd: two gateways (two meters and two
// Flushers on two pools of one database) count the same keys, hours and
// operations and flush twice each, concurrently; the operation hours hold the exact sums, buckets added
// element-wise, and each operation and coordinate is written once.
func TestWriteOperationsTwoGatewaysAdd(t *testing.T) {
	dsn := migratedDB(t)
	ctx := context.Background()
	shape := &contract.OperationShape{Coordinates: []string{"Book.title", "Query.book"}, Normalized: "query Op0{book(id:0){title}}"}
	count := func(m *OperationMeter) {
		for i := range 120 {
			var sh *contract.OperationShape
			if i%3 == 0 {
				sh = shape
			}
			m.Add(&OperationSample{KeyID: fmt.Sprintf("key_%d", i%2), Org: fixedOrgSource("org"), At: t0.Add(time.Duration(i%2) * time.Hour),
				Operation: testOp(i%3, sh), Error: i%5 == 0, Cost: int64(i), Latency: time.Duration(i%4) * time.Millisecond})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 2 {
		m := NewOperationMeter(0, 0)
		f := NewFlusher(NewMeter(0), newPool(t, dsn), time.Hour, nil).WithOperations(m)
		wg.Go(func() {
			for range 2 {
				count(m)
				errs <- f.FlushNow(ctx)
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
	got := operationHours(t, pool)
	// i%2 picks key and hour together, i%3 the operation: 6 cells.
	if len(got) != 6 {
		t.Fatalf("%d operation hours, want 6: %v", len(got), got)
	}
	want := map[string]OperationRow{}
	for i := range 120 {
		k := fmt.Sprintf("key_%d %s %s", i%2, fmt.Sprintf("%08x", i%3), t0.Add(time.Duration(i%2)*time.Hour).Format("15"))
		w := want[k]
		w.Requests += 4
		if i%5 == 0 {
			w.Errors += 4
		}
		w.Cost += 4 * int64(i)
		w.Latency[LatencyBucket(time.Duration(i%4)*time.Millisecond)] += 4
		want[k] = w
	}
	for k, w := range want {
		g := got[k]
		if g.Requests != w.Requests || g.Errors != w.Errors || g.Cost != w.Cost || g.Latency != w.Latency || g.OrgID != "org" || g.Type != "query" {
			t.Fatalf("%s: %+v, want %+v", k, g, w)
		}
	}
	var ops, coords int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM civicgate.operations), (SELECT count(*) FROM civicgate.operation_coordinates)`).Scan(&ops, &coords); err != nil {
		t.Fatal(err)
	}
	if ops != 3 || coords != 2 {
		t.Fatalf("%d operations and %d coordinates, want 3 and 2", ops, coords)
	}
	var text string
	if err := pool.QueryRow(ctx, `SELECT normalized FROM civicgate.operations WHERE op_hash = $1`, fmt.Sprintf("%064x", 0)).Scan(&text); err != nil || text != shape.Normalized {
		t.Fatalf("normalized %q, %v", text, err)
	}
}

// TestFlusherOperationsLostAcknowledgementCountOnce: the operation hours go
// in the same batch as the minute rows, so a batch whose commit landed
// unheard and is retried under its id adds neither twice.
func TestFlusherOperationsLostAcknowledgementCountOnce(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	m, om := NewMeter(0), NewOperationMeter(0, 0)
	f := NewFlusher(m, pool, time.Hour, nil).WithOperations(om)
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
	now := time.Now()
	count := func(n int) {
		for range n {
			m.Add("k", "o", now, Delta{Admitted: 1})
			om.Add(&OperationSample{KeyID: "k", Org: fixedOrgSource("o"), At: now, Operation: testOp(1, nil)})
		}
	}
	count(3)
	if err := f.FlushNow(ctx); err == nil {
		t.Fatal("the flush whose answer was lost succeeded")
	}
	count(10)
	if err := f.FlushNow(ctx); err != nil {
		t.Fatal(err)
	}
	var admitted, requests int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT sum(admitted) FROM civicgate.usage_minute)::bigint,
		(SELECT sum(requests) FROM civicgate.usage_operation_hour)::bigint`).Scan(&admitted, &requests); err != nil {
		t.Fatal(err)
	}
	if admitted != 13 || requests != 13 {
		t.Fatalf("admitted %d, operation requests %d after a lost acknowledgement; want 13 and 13", admitted, requests)
	}
}

// TestPruneOperations: operation hours older than HourRetention go, and
// operations last seen before then with their coordinates; newer stay.
func TestPruneOperations(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := time.Now().UTC()
	old, recent := now.Add(-HourRetention-2*time.Hour), now.Add(-time.Hour)
	shape := &contract.OperationShape{Coordinates: []string{"Query.a"}, Normalized: "{a}"}
	b := Batch{
		Operations: []OperationRow{
			{KeyID: "k", OrgID: "o", Start: old, Hash: "h_old", Type: "query", Requests: 1, LastSeen: old},
			{KeyID: "k", OrgID: "o", Start: recent, Hash: "h_new", Type: "query", Requests: 1, LastSeen: recent},
		},
		Records: []OperationRecord{
			{Hash: "h_old", Type: "query", Normalized: shape.Normalized, Coordinates: shape.Coordinates, Seen: old},
			{Hash: "h_new", Type: "query", Normalized: shape.Normalized, Coordinates: shape.Coordinates, Seen: recent},
		},
	}
	if _, err := WriteFlush(ctx, pool, NewBatchID(), b); err != nil {
		t.Fatal(err)
	}
	if err := Prune(ctx, pool, now); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	rows, _ := pool.Query(ctx, `SELECT op_hash FROM civicgate.usage_operation_hour UNION ALL SELECT op_hash FROM civicgate.operations
		UNION ALL SELECT op_hash FROM civicgate.operation_coordinates`)
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	if rows.Err() != nil || !slices.Equal(hashes, []string{"h_new", "h_new", "h_new"}) {
		t.Fatalf("after prune: %v (%v)", hashes, rows.Err())
	}
}
