package usage

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// byCell indexes rows by "key minute" and fails on a duplicate cell.
func byCell(t *testing.T, rows []Row) map[string]Row {
	t.Helper()
	m := map[string]Row{}
	for _, r := range rows {
		k := r.KeyID + " " + r.Start.Format("2006-01-02T15:04")
		if _, dup := m[k]; dup {
			t.Fatalf("cell %s drained twice", k)
		}
		m[k] = r
	}
	return m
}

func TestMeterConcurrentAddsSumExactly(t *testing.T) {
	m := NewMeter(0)
	const goroutines, perG, keys = 16, 5000, 7
	var wg sync.WaitGroup
	drained := make(chan []Row, 1)
	stopDrain := make(chan struct{})
	// Drains run during the Adds: nothing may be lost or counted twice.
	go func() {
		var all []Row
		for {
			select {
			case <-stopDrain:
				drained <- all
				return
			default:
				all = append(all, m.Drain()...)
			}
		}
	}()
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				key := fmt.Sprintf("key_%d", (g+i)%keys)
				at := t0.Add(time.Duration(i%3) * time.Minute).Add(time.Duration(i%59) * time.Second)
				m.Add(key, "org_a", at, Delta{Admitted: 1, Refused: 2, ClientErrors: 3, ServerErrors: 4, Cost: 5, MCP: 6})
			}
		})
	}
	wg.Wait()
	close(stopDrain)
	rows := append(<-drained, m.Drain()...)
	// Rows of successive drains may repeat a cell: sum per cell.
	sums := map[string]Delta{}
	for _, r := range rows {
		if r.OrgID != "org_a" || r.Start.Second() != 0 || r.Start.Location() != time.UTC {
			t.Fatalf("row %+v: want org_a and a UTC minute", r)
		}
		k := r.KeyID + " " + r.Start.Format("15:04")
		sums[k] = sums[k].Plus(r.Delta)
	}
	if len(sums) != keys*3 {
		t.Fatalf("%d cells, want %d", len(sums), keys*3)
	}
	const n = goroutines * perG
	if got, want := Sum(rows), (Delta{n, 2 * n, 3 * n, 4 * n, 5 * n, 6 * n}); got != want {
		t.Fatalf("sum %+v, want %+v", got, want)
	}
	if m.Cells() != 0 || m.Dropped() != 0 {
		t.Fatalf("after drain: %d cells, %d dropped", m.Cells(), m.Dropped())
	}
}

func TestMeterMinuteIsUTCTruncated(t *testing.T) {
	m := NewMeter(0)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	m.Add("k", "o", t0.Add(59*time.Second+999*time.Millisecond).In(ny), Delta{Admitted: 1})
	m.Add("k", "o", t0, Delta{Admitted: 1})
	m.Add("k", "o", t0.Add(-time.Nanosecond), Delta{Admitted: 1})
	m.Add("k", "o", time.Unix(-1, 0), Delta{Admitted: 1}) // before 1970: floored, not rounded to zero
	cells := byCell(t, m.Drain())
	for k, want := range map[string]int64{"k 2026-03-10T12:00": 2, "k 2026-03-10T11:59": 1, "k 1969-12-31T23:59": 1} {
		if cells[k].Admitted != want || !cells[k].Start.Equal(cells[k].Start.Truncate(time.Minute)) {
			t.Fatalf("cell %s: %+v, want admitted %d (cells %v)", k, cells[k], want, cells)
		}
	}
}

func TestMeterDrainKeepsCellsApart(t *testing.T) {
	m := NewMeter(0)
	m.Add("k1", "o1", t0, Delta{Admitted: 3, Cost: 30})
	m.Add("k1", "o1", t0.Add(time.Minute), Delta{Refused: 1})
	m.Add("k2", "o2", t0, Delta{ServerErrors: 2, Admitted: 2})
	m.Add("k1", "o1", t0, Delta{Admitted: 1, Cost: 10})
	got := byCell(t, m.Drain())
	if len(m.Drain()) != 0 || m.Cells() != 0 {
		t.Fatal("a second drain returned rows")
	}
	want := map[string]Delta{
		"k1 2026-03-10T12:00": {Admitted: 4, Cost: 40},
		"k1 2026-03-10T12:01": {Refused: 1},
		"k2 2026-03-10T12:00": {Admitted: 2, ServerErrors: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("cells %v", got)
	}
	for k, d := range want {
		if got[k].Delta != d {
			t.Fatalf("cell %s: %+v, want %+v", k, got[k].Delta, d)
		}
	}
	if got["k2 2026-03-10T12:00"].OrgID != "o2" {
		t.Fatalf("org lost in the drain: %+v", got)
	}
}

func TestMeterBoundAndDropped(t *testing.T) {
	m := NewMeter(3)
	for i := range 5 {
		m.Add(fmt.Sprintf("k%d", i), "o", t0, Delta{Admitted: 1})
	}
	m.Add("k0", "o", t0, Delta{Admitted: 1})                  // an existing cell still counts
	m.Add("k0", "o", t0.Add(time.Minute), Delta{Admitted: 1}) // a new minute is a new cell: dropped
	if m.Cells() != 3 || m.Dropped() != 3 {
		t.Fatalf("cells %d dropped %d, want 3 and 3", m.Cells(), m.Dropped())
	}
	rows := m.Drain()
	if s := Sum(rows); s.Admitted != 4 || len(rows) != 3 {
		t.Fatalf("drained %d rows summing %+v", len(rows), s)
	}
	// Room again after the drain.
	m.Add("new", "o", t0, Delta{Admitted: 1})
	if m.Cells() != 1 || m.Dropped() != 3 {
		t.Fatalf("after the drain: cells %d dropped %d, want 1 and 3", m.Cells(), m.Dropped())
	}
}

func TestMeterAddDoesNotAllocate(t *testing.T) {
	m := NewMeter(0)
	key, org := "key_0123456789abcdef", "org_0123456789abcdef"
	m.Add(key, org, t0, Delta{Admitted: 1})
	d := Delta{Admitted: 1, Cost: 3}
	if n := testing.AllocsPerRun(1000, func() { m.Add(key, org, t0, d) }); n != 0 {
		t.Fatalf("Add on an existing cell: %v allocations, want 0", n)
	}
}
