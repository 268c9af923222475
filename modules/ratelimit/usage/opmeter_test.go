package usage

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

// testOp is an operation as the guard publishes it; hash i is 64 hex
// characters, as a document hash is.
func testOp(i int, shape *contract.OperationShape) *contract.GraphQLOperation {
	return &contract.GraphQLOperation{Type: "query", Name: fmt.Sprintf("Op%d", i), DocumentHash: fmt.Sprintf("%064x", i), Shape: shape}
}

func TestLatencyBuckets(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{0, 0}, {999 * time.Microsecond, 0}, {time.Millisecond, 1}, {1999 * time.Microsecond, 1}, {2 * time.Millisecond, 2},
		{100 * time.Millisecond, 7}, {16383 * time.Millisecond, 14}, {16384 * time.Millisecond, 15}, {time.Hour, 15}, {-time.Second, 0}} {
		if got := LatencyBucket(c.d); got != c.want {
			t.Errorf("LatencyBucket(%s) = %d, want %d", c.d, got, c.want)
		}
	}
	// 90 requests at 3 ms, 10 at 100 ms: p50 in [2,4) ms, p95 in [64,128) ms.
	var l Latencies
	l[LatencyBucket(3*time.Millisecond)] += 90
	l[LatencyBucket(100*time.Millisecond)] += 10
	if p50, p95 := l.Percentile(0.5), l.Percentile(0.95); p50 != 4*time.Millisecond || p95 != 128*time.Millisecond {
		t.Fatalf("p50 %s p95 %s, want 4ms 128ms", p50, p95)
	}
	var none Latencies
	if none.Percentile(0.5) != 0 {
		t.Fatal("a percentile of nothing is not 0")
	}
}

// TestOperationMeterConcurrentAddsSumExactly: Adds from many goroutines with
// Drains running meanwhile: every request, error, cost unit and latency is
// drained exactly once.
func TestOperationMeterConcurrentAddsSumExactly(t *testing.T) {
	m := NewOperationMeter(0, 0)
	const goroutines, perG, keys, ops = 8, 4000, 5, 7
	var wg sync.WaitGroup
	stop, drained := make(chan struct{}), make(chan []OperationRow, 1)
	go func() {
		var all []OperationRow
		for {
			select {
			case <-stop:
				rows, _ := m.Drain()
				drained <- append(all, rows...)
				return
			default:
				rows, _ := m.Drain()
				all = append(all, rows...)
			}
		}
	}()
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				s := OperationSample{KeyID: fmt.Sprintf("key_%d", (g+i)%keys), Org: fixedOrgSource("org"), At: t0.Add(time.Duration(i%3) * time.Hour),
					Operation: testOp(i%ops, nil), Error: i%4 == 0, Cost: 2, Latency: time.Duration(i%5) * time.Millisecond}
				m.Add(&s)
			}
		})
	}
	wg.Wait()
	close(stop)
	rows := rollupOperations(<-drained)
	var req, errs, cost, lat int64
	for _, r := range rows {
		req, errs, cost = req+r.Requests, errs+r.Errors, cost+r.Cost
		for _, n := range r.Latency {
			lat += n
		}
		if r.Hash == OtherOperation || r.OrgID != "org" || r.Start.Minute() != 0 {
			t.Fatalf("row %+v", r)
		}
	}
	const n = goroutines * perG
	if req != n || errs != n/4 || cost != 2*n || lat != n {
		t.Fatalf("requests %d errors %d cost %d latencies %d, want %d %d %d %d", req, errs, cost, lat, n, n/4, 2*n, n)
	}
	if len(rows) != keys*ops*3 {
		t.Fatalf("%d cells, want %d", len(rows), keys*ops*3)
	}
}

type fixedOrgSource string

func (o fixedOrgSource) Org() string { return string(o) }

// TestOperationMeterAddDoesNotAllocate: counting in an existing cell
// allocates nothing.
func TestOperationMeterAddDoesNotAllocate(t *testing.T) {
	m := NewOperationMeter(0, 0)
	s := OperationSample{KeyID: "key_0123456789abcdef", Org: fixedOrgSource("org_1"), At: t0, Operation: testOp(1, nil), Cost: 3, Latency: 7 * time.Millisecond}
	m.Add(&s)
	if a := testing.AllocsPerRun(1000, func() { m.Add(&s) }); a != 0 {
		t.Fatalf("Add allocates %.1f times per call on an existing cell", a)
	}
}

// TestOperationMeterPerKeyBound: a key's operations beyond its bound in an
// hour are counted under other — across drains, as the bound is per hour —
// and nothing is lost from the totals; another key is not affected.
func TestOperationMeterPerKeyBound(t *testing.T) {
	m := NewOperationMeter(0, 10)
	at := time.Now()
	add := func(key string, i int) {
		m.Add(&OperationSample{KeyID: key, Org: fixedOrgSource("o"), At: at, Operation: testOp(i, nil), Latency: time.Millisecond})
	}
	for i := range 25 {
		add("flood", i)
	}
	first, _ := m.Drain()
	for i := range 25 { // the same 10 again, and 15 more folded
		add("flood", i)
	}
	add("quiet", 99)
	second, _ := m.Drain()
	rows := rollupOperations(append(first, second...))
	per := map[string]int64{}
	var own int
	for _, r := range rows {
		per[r.KeyID] += r.Requests
		if r.KeyID == "flood" && r.Hash != OtherOperation {
			own++
		}
		if r.Hash == OtherOperation && (r.Requests != 30 || r.Name != OtherOperation) {
			t.Fatalf("other row %+v, want 30 requests", r)
		}
	}
	if own != 10 || per["flood"] != 50 || per["quiet"] != 1 {
		t.Fatalf("flood: %d own operations, %d requests; quiet %d requests", own, per["flood"], per["quiet"])
	}
	if m.Folded() != 30 || m.Dropped() != 0 {
		t.Fatalf("folded %d dropped %d", m.Folded(), m.Dropped())
	}
}

// TestOperationMeterCellBound: a key's operations beyond the per-key bound
// go to its other cell even when the meter holds more keys; beyond the
// meter's bound new cells are not made and the samples are counted as
// dropped (as Meter does).
func TestOperationMeterCellBound(t *testing.T) {
	m := NewOperationMeter(3, 2)
	for i := range 5 {
		m.Add(&OperationSample{KeyID: "a", At: t0, Operation: testOp(i, nil)})
	}
	if m.Cells() != 3 || m.Folded() != 3 { // two of a's own and a's other
		t.Fatalf("%d cells, %d folded; want 3, 3", m.Cells(), m.Folded())
	}
	m.Add(&OperationSample{KeyID: "b", At: t0, Operation: testOp(1, nil)})
	if m.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", m.Dropped())
	}
	rows, _ := m.Drain()
	var total int64
	for _, r := range rows {
		total += r.Requests
	}
	if total != 5 || m.Cells() != 0 {
		t.Fatalf("total %d cells %d after drain", total, m.Cells())
	}
}

// TestOperationMeterRecordsOncePerHour: an operation's record is queued once
// per hash and hour, again when its shape arrives, and not for other.
func TestOperationMeterRecordsOncePerHour(t *testing.T) {
	m := NewOperationMeter(0, 0)
	shape := &contract.OperationShape{Coordinates: []string{"Query.book", "Book.title"}, Normalized: "query Op1{book(id:0){title}}"}
	add := func(key string, at time.Time, op *contract.GraphQLOperation) {
		m.Add(&OperationSample{KeyID: key, At: at, Operation: op})
	}
	add("a", t0, testOp(1, nil))
	add("b", t0, testOp(1, nil))
	_, recs := m.Drain()
	if len(recs) != 1 || recs[0].Normalized != "" {
		t.Fatalf("records %+v", recs)
	}
	add("a", t0, testOp(1, nil)) // a new cell, same hour: no new record
	if _, recs = m.Drain(); len(recs) != 0 {
		t.Fatalf("queued again within the hour: %+v", recs)
	}
	add("a", t0, testOp(1, shape)) // the shape arrived
	if _, recs = m.Drain(); len(recs) != 1 || recs[0].Normalized != shape.Normalized || len(recs[0].Coordinates) != 2 {
		t.Fatalf("records with shape %+v", recs)
	}
	add("a", t0.Add(time.Hour), testOp(1, shape)) // next hour: last_seen moves
	if _, recs = m.Drain(); len(recs) != 1 {
		t.Fatalf("records next hour %+v", recs)
	}
}

// TestOperationMeterMemory measures what a full meter holds per cell; the
// DefaultMaxOperationCells comment quotes it.
func TestOperationMeterMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures memory")
	}
	const cells = 20_000
	m := NewOperationMeter(cells, 1_000)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range cells {
		m.Add(&OperationSample{KeyID: fmt.Sprintf("key_%016x", i/20), Org: fixedOrgSource("org_0123456789abcdef"), At: t0,
			Operation: testOp(i, nil)})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / cells
	t.Logf("%.0f bytes per operation cell (with the per-hour memory of its hash); %d cells ≈ %.0f MB",
		per, DefaultMaxOperationCells, per*DefaultMaxOperationCells/1e6)
	if per > 1000 {
		t.Fatalf("%.0f bytes per cell", per)
	}
	runtime.KeepAlive(m)
}

// BenchmarkOperationMeterAdd is the hot path: one operation counted in an
// existing cell.
func BenchmarkOperationMeterAdd(b *testing.B) {
	m := NewOperationMeter(0, 0)
	s := OperationSample{KeyID: "key_0123456789abcdef", Org: fixedOrgSource("org"), At: t0, Operation: testOp(1, nil), Cost: 3, Latency: 12 * time.Millisecond}
	m.Add(&s)
	b.ReportAllocs()
	for b.Loop() {
		m.Add(&s)
	}
}

// BenchmarkOperationMeterAddParallel: 1024 keys, 8 operations each.
func BenchmarkOperationMeterAddParallel(b *testing.B) {
	m := NewOperationMeter(0, 0)
	samples := make([]OperationSample, 1024*8)
	for i := range samples {
		samples[i] = OperationSample{KeyID: fmt.Sprintf("key_%016x", i/8), At: t0, Operation: testOp(i%8, nil), Latency: time.Millisecond}
		m.Add(&samples[i])
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Add(&samples[i%len(samples)])
			i += 7
		}
	})
}
