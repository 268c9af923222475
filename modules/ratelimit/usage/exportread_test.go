package usage

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHoursAfterPagesInExportOrder: pages of HoursAfter in (start, key)
// order cover every hour row before Before once, an organization filter
// narrows them, and a bad limit is refused.
func TestHoursAfterPagesInExportOrder(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	h := t0.Truncate(time.Hour)
	rows := []Row{
		{KeyID: "k2", OrgID: "o1", Start: h, Delta: Delta{Admitted: 1}},
		{KeyID: "k1", OrgID: "o1", Start: h, Delta: Delta{Admitted: 2}},
		{KeyID: "k3", OrgID: "o2", Start: h.Add(time.Hour), Delta: Delta{Cost: 5, MCP: 1}},
		{KeyID: "k1", OrgID: "o1", Start: h.Add(2 * time.Hour), Delta: Delta{Refused: 4}}, // not before Before
	}
	if err := Write(ctx, pool, rows); err != nil {
		t.Fatal(err)
	}
	var got []string
	var after Row
	for range 10 {
		page, err := HoursAfter(ctx, pool, HoursAfterArgs{AfterStart: after.Start, AfterKey: after.KeyID, Before: h.Add(2 * time.Hour), Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			got = append(got, r.Start.Format("15")+"/"+r.KeyID)
		}
		after = page[len(page)-1]
	}
	want := []string{h.Format("15") + "/k1", h.Format("15") + "/k2", h.Add(time.Hour).Format("15") + "/k3"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("pages = %v, want %v", got, want)
	}
	only, err := HoursAfter(ctx, pool, HoursAfterArgs{Before: h.Add(3 * time.Hour), OrgID: "o2", Limit: 10})
	if err != nil || len(only) != 1 || only[0].KeyID != "k3" || only[0].Cost != 5 || only[0].MCP != 1 {
		t.Fatalf("org o2 = %+v, %v", only, err)
	}
	if _, err := HoursAfter(ctx, pool, HoursAfterArgs{Limit: 0}); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("limit 0: %v", err)
	}
	if _, err := OrgID(ctx, pool, "nobody"); !errors.Is(err, ErrUnknownOrg) {
		t.Fatalf("unknown org: %v", err)
	}
	if id, err := OrgID(ctx, pool, "o2"); err != nil || id != "o2" {
		t.Fatalf("usage-only org: %q %v", id, err)
	}
}

// TestOperationHoursOf: the operation rows of exactly the key hours asked
// for, in (start, key, hash) order.
func TestOperationHoursOf(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := t0.Add(72 * time.Hour)
	books, author := seedOperations(t, pool, now)
	hour := now.Add(-time.Hour).UTC().Truncate(time.Hour)
	got, err := OperationHoursOf(ctx, pool, []KeyHour{{"key_2", hour}, {"key_1", hour}, {"key_9", hour.Add(-time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		key, hash        string
		requests, errors int64
	}
	var rows []row
	for _, o := range got {
		if !o.Start.Equal(hour) {
			t.Fatalf("row of another hour: %+v", o)
		}
		rows = append(rows, row{o.KeyID, o.Hash, o.Requests, o.Errors})
	}
	want := []row{{"key_1", author.DocumentHash, 1, 0}, {"key_1", books.DocumentHash, 3, 0}, {"key_2", books.DocumentHash, 2, 1}}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Fatalf("rows %+v, want %+v", rows, want)
		}
	}
	if got[0].Name != "Author" || got[0].Type != "query" || got[1].Cost != 6 {
		t.Fatalf("details %+v", got[:2])
	}
	if none, err := OperationHoursOf(ctx, pool, nil); err != nil || none != nil {
		t.Fatalf("no hours: %v %v", none, err)
	}
}
