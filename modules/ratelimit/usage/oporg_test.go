package usage

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
)

// TestOrganizationOperationsAddTheKeys: an organization's operations read
// from its sums per hour and its keys' last hours (docs/design.md D83)
// answer exactly what its keys' rows add up to — requests, errors, cost,
// latency buckets, distinct keys, last seen — for a window that ends now
// and for one that ends before the newest hours (the keys then counted from
// the hours).
func TestOrganizationOperationsAddTheKeys(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := t0.Add(72 * time.Hour)
	books, _ := seedOperations(t, pool, now)
	// key_3 ran Books three days before: outside the day, inside the week.
	m := NewOperationMeter(0, 0)
	m.Add(&OperationSample{KeyID: "key_3", Org: fixedOrgSource("org_a"), At: now.Add(-70 * time.Hour), Operation: books, Latency: 3 * time.Second})
	ops, recs := m.Drain()
	if _, err := WriteFlush(ctx, pool, NewBatchID(), Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  OperationsArgs
		books int64 // keys that ran Books in the window
	}{
		{"day", OperationsArgs{Org: "org_a", Since: 24 * time.Hour, Now: now}, 2},
		{"week", OperationsArgs{Org: "org_a", Since: 7 * 24 * time.Hour, Now: now}, 3},
		{"ended before the newest hours", OperationsArgs{Org: "org_a", Since: 24 * time.Hour, Now: now.Add(-47 * time.Hour)}, 1},
		{"ended before, reaching back", OperationsArgs{Org: "org_a", Since: 48 * time.Hour, Now: now.Add(-20 * time.Hour)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			perKey, err := Operations(ctx, pool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]OrganizationOperation{}
			for _, r := range perKey {
				o := want[r.Hash]
				o.Hash, o.Type, o.Name = r.Hash, r.Type, r.Name
				o.Requests, o.Errors, o.Cost, o.Keys = o.Requests+r.Requests, o.Errors+r.Errors, o.Cost+r.Cost, o.Keys+1
				o.Latency.Plus(&r.Latency)
				o.LastSeen = maxTime(o.LastSeen, r.LastSeen)
				want[r.Hash] = o
			}
			for h, o := range want {
				o.P50, o.P95 = o.Latency.Percentile(0.50), o.Latency.Percentile(0.95)
				want[h] = o
			}
			got, err := OrganizationOperations(ctx, pool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d operations %+v, want %d %+v", len(got), got, len(want), want)
			}
			for i, o := range got {
				if o != want[o.Hash] {
					t.Errorf("%s: %+v, want %+v", o.Hash, o, want[o.Hash])
				}
				if i > 0 && got[i-1].Requests < o.Requests {
					t.Errorf("not most requests first: %+v", got)
				}
			}
			if w := want[books.DocumentHash].Keys; w != c.books {
				t.Fatalf("the keys' rows give Books %d keys, the case wants %d (%v)", w, c.books, slices.Collect(maps.Keys(want)))
			}
		})
	}
	if _, err := OrganizationOperations(ctx, pool, OperationsArgs{Org: "nobody", Since: time.Hour, Now: now}); err == nil {
		t.Fatal("an unknown organization answered")
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
