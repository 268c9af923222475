package usage

import (
	"context"
	"testing"
	"time"
)

// TestLevelAndWindow: the thresholds and the epoch-aligned windows every
// gateway computes alike.
func TestLevelAndWindow(t *testing.T) {
	for _, c := range []struct{ limit, remaining int64 }{{100, 21}, {100, 20}, {100, 1}, {100, 0}, {40, 8}, {40, 9}, {3, 1}, {0, 0}} {
		got := LevelOf(c.limit, c.remaining)
		want := 0
		switch {
		case c.limit > 0 && c.remaining <= 0:
			want = 100
		case c.limit > 0 && float64(c.limit-c.remaining) >= 0.8*float64(c.limit):
			want = 80
		}
		if got != want {
			t.Errorf("LevelOf(%d, %d) = %d, want %d", c.limit, c.remaining, got, want)
		}
	}
	at := time.Date(2026, 12, 7, 19, 55, 42, 5000, time.UTC)
	for w, want := range map[time.Duration]time.Time{
		time.Minute:    time.Date(2026, 12, 7, 19, 55, 0, 0, time.UTC),
		time.Hour:      time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC),
		24 * time.Hour: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC),
	} {
		if got := WindowStart(at, w); !got.Equal(want) {
			t.Errorf("WindowStart(%s, %s) = %s, want %s", at, w, got, want)
		}
	}
}

// TestCrossingsOncePerWindow (PostgreSQL): two gateways' meters report the
// same 80 % crossing, each many times; both flush, one row is recorded. A
// new window records again; the mailer's reads and marks see each once.
func TestCrossingsOncePerWindow(t *testing.T) {
	dsn := migratedDB(t)
	pool := newPool(t, dsn)
	ctx := context.Background()
	start := WindowStart(time.Now(), time.Minute)
	c := Crossing{OrgID: "org_a", KeyID: "key_a", Policy: "free", Kind: KindRequests, Level: Level80,
		WindowStart: start, Window: time.Minute, Limit: 40, CrossedAt: start.Add(10 * time.Second)}
	var gateways [2]*CrossingMeter
	for i := range gateways {
		gateways[i] = NewCrossingMeter(0)
		for range 50 {
			gateways[i].Add(c)
		}
		cost := c
		cost.Kind, cost.Policy, cost.Limit = KindCost, "free-cost", 5000
		gateways[i].Add(cost)
	}
	for i, m := range gateways {
		b := Batch{Crossings: m.Drain()}
		if len(b.Crossings) != 2 {
			t.Fatalf("gateway %d holds %d crossings, want 2 (one per kind)", i, len(b.Crossings))
		}
		if _, err := WriteFlush(ctx, pool, NewBatchID(), b); err != nil {
			t.Fatal(err)
		}
		if again := m.Drain(); len(again) != 0 {
			t.Fatalf("drained twice: %+v", again)
		}
		m.Add(c) // seen: not held again
		if again := m.Drain(); len(again) != 0 {
			t.Fatalf("a crossing seen is held again: %+v", again)
		}
	}
	next := c
	next.WindowStart, next.CrossedAt = start.Add(time.Minute), start.Add(time.Minute+time.Second)
	gateways[1].Add(next)
	if _, err := WriteFlush(ctx, pool, NewBatchID(), Batch{Crossings: gateways[1].Drain()}); err != nil {
		t.Fatal(err)
	}
	got, err := UnmailedCrossings(ctx, pool, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("recorded %d crossings, want 3: %+v", len(got), got)
	}
	if g := got[0]; g.OrgID != "org_a" || g.KeyID != "key_a" || g.Level != 80 || g.Limit != 40 || !g.WindowStart.Equal(start) || g.Window != time.Minute {
		t.Fatalf("first crossing %+v", g)
	}
	n, err := MarkCrossingsMailed(ctx, pool, []int64{got[0].ID, got[1].ID})
	if err != nil || n != 2 {
		t.Fatalf("marked %d %v", n, err)
	}
	if n, err := MarkCrossingsMailed(ctx, pool, []int64{got[0].ID}); err != nil || n != 0 {
		t.Fatalf("marked again: %d %v", n, err)
	}
	left, err := UnmailedCrossings(ctx, pool, 10)
	if err != nil || len(left) != 1 || !left[0].WindowStart.Equal(next.WindowStart) {
		t.Fatalf("unmailed after marking: %+v %v", left, err)
	}
}

// TestCrossingMeterBound: a full meter forgets the windows that ended, and
// drops new crossings only when none has.
func TestCrossingMeterBound(t *testing.T) {
	m := NewCrossingMeter(1)
	old := time.Now().Add(-time.Hour)
	c := Crossing{OrgID: "o", Policy: "free", Kind: KindRequests, Level: Level80, WindowStart: WindowStart(old, time.Minute),
		Window: time.Minute, Limit: 10, CrossedAt: old}
	m.Add(c)
	c.WindowStart, c.CrossedAt = WindowStart(time.Now(), time.Minute), time.Now()
	m.Add(c) // the old window ended: forgotten, room made
	c.KeyID = "k"
	m.Add(c) // full with a running window: dropped
	if got := len(m.Drain()); got != 2 || m.Dropped() != 1 {
		t.Fatalf("held %d, dropped %d; want 2 and 1", got, m.Dropped())
	}
}

// TestCrossingSeenDoesNotAllocate: a request past 80 % of a quota whose
// crossing this gateway already reported costs a lookup, no allocation.
func TestCrossingSeenDoesNotAllocate(t *testing.T) {
	m := NewCrossingMeter(0)
	now := time.Now()
	c := Crossing{OrgID: "org_a", KeyID: "key_a", Policy: "free", Kind: KindRequests, Level: Level80,
		WindowStart: WindowStart(now, time.Hour), Window: time.Hour, Limit: 40, CrossedAt: now}
	m.Add(c)
	if n := testing.AllocsPerRun(1000, func() { m.Add(c) }); n != 0 {
		t.Fatalf("Add of a crossing seen allocates %.0f times", n)
	}
}
