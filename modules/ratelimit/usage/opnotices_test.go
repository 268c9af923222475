package usage

import (
	"context"
	"testing"
	"time"
)

// TestDeprecatedUsers: every organization's use of each deprecated
// coordinate, summed over its keys (the organization's hour sums, D78), with
// the operations and the first hour seen; an organization whose operations
// read only coordinates nobody deprecated is not listed, and hours before
// since are not counted.
func TestDeprecatedUsers(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := time.Now().UTC()
	at := now.Add(-2 * time.Hour)
	books := shapedOp("Books", 0xb, []string{"Book.title", "Query.books"}, []string{"Book.title"}, []string{`Use <b>name</b>`})
	shelf := shapedOp("Shelf", 0xc, []string{"Book.title", "Query.shelf"}, []string{"Book.title"}, []string{`Use <b>name</b>`})
	plain := shapedOp("Plain", 0xd, []string{"Book.name", "Query.books"}, nil, nil)
	m := NewOperationMeter(0, 0)
	flushOps(t, pool, m, "key_1", "org_a", books, 3, at)
	flushOps(t, pool, m, "key_2", "org_a", books, 2, now)
	flushOps(t, pool, m, "key_2", "org_a", shelf, 7, now)
	flushOps(t, pool, m, "key_9", "org_b", plain, 40, now)
	flushOps(t, pool, m, "key_8", "org_c", books, 1, now.Add(-72*time.Hour)) // before since

	got, err := DeprecatedUsers(ctx, pool, now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d pairs, want org_a's Book.title only: %+v", len(got), got)
	}
	a := got[0]
	if a.Org != "org_a" || a.Coordinate != "Book.title" || a.Reason != "Use <b>name</b>" || a.Requests != 12 {
		t.Errorf("org_a: %+v", a)
	}
	if len(a.Operations) != 2 || a.Operations[0] != (OperationRef{Hash: shelf.DocumentHash, Name: "Shelf", Requests: 7}) ||
		a.Operations[1] != (OperationRef{Hash: books.DocumentHash, Name: "Books", Requests: 5}) {
		t.Errorf("operations %+v, want Shelf 7 then Books 5", a.Operations)
	}
	if want := at.Truncate(time.Hour); !a.FirstSeen.Equal(want) {
		t.Errorf("first seen %s, want the hour of the first request %s", a.FirstSeen, want)
	}
	// a longer window reaches org_c's old use too
	all, err := DeprecatedUsers(ctx, pool, now.Add(-96*time.Hour))
	if err != nil || len(all) != 2 || all[1].Org != "org_c" || all[1].Requests != 1 {
		t.Errorf("96 h: %+v %v", all, err)
	}
	// a lifted deprecation: no longer listed
	lifted := shapedOp("Books", 0xb, []string{"Book.title", "Query.books"}, nil, nil)
	flushOps(t, pool, NewOperationMeter(0, 0), "key_1", "org_a", lifted, 1, now)
	flushOps(t, pool, NewOperationMeter(0, 0), "key_1", "org_a", shapedOp("Shelf", 0xc, []string{"Book.title", "Query.shelf"}, nil, nil), 1, now)
	if got, err := DeprecatedUsers(ctx, pool, now.Add(-24*time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("after the deprecation is lifted: %+v %v", got, err)
	}
}
