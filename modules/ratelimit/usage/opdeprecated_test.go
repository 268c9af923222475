package usage

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/contract"
)

// flushOps counts n requests of op for key of org at at through a fresh
// meter and writes them, as a gateway's flush does.
func flushOps(t *testing.T, pool *pgxpool.Pool, m *OperationMeter, key, org string, op *contract.GraphQLOperation, n int, at time.Time) {
	t.Helper()
	for range n {
		m.Add(&OperationSample{KeyID: key, Org: fixedOrgSource(org), At: at, Operation: op, Cost: 1, Latency: 3 * time.Millisecond})
	}
	ops, recs := m.Drain()
	if _, err := WriteFlush(context.Background(), pool, NewBatchID(), Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

// reasonsOf reads operation_coordinates' reasons of one operation,
// "coordinate=reason" or "coordinate" when NULL, sorted.
func reasonsOf(t *testing.T, pool *pgxpool.Pool, hash string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT coordinate, deprecated_reason FROM civicgate.operation_coordinates
		WHERE op_hash = $1 ORDER BY coordinate`, hash)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var c string
		var r *string
		if err := rows.Scan(&c, &r); err != nil {
			t.Fatal(err)
		}
		if r != nil {
			c += "=" + *r
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func shapedOp(name string, hash int, coords, deprecated, reasons []string) *contract.GraphQLOperation {
	return &contract.GraphQLOperation{Type: "query", Name: name, DocumentHash: fmt.Sprintf("%064x", hash),
		Shape: &contract.OperationShape{Coordinates: coords, Deprecated: deprecated, DeprecationReasons: reasons, Normalized: "query " + name + "{x}"}}
}

// TestDeprecatedUse: the deprecated coordinates an organization's keys
// read, with the schema's reason, the requests and distinct keys of the
// operations reading each and those operations; another organization's
// use of the same coordinate is not counted, and a coordinate nobody
// deprecated is not listed.
func TestDeprecatedUse(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := time.Now()
	at := now.Add(-time.Hour)
	books := shapedOp("Books", 0xb, []string{"Book.title", "Query.books", "Query.books(legacy:)", "Query.oldBooks"},
		[]string{"Query.books(legacy:)", "Query.oldBooks"}, []string{"use first", `<i>use</i> "books"`})
	shelf := shapedOp("Shelf", 0xc, []string{"Book.title", "Query.oldBooks"}, []string{"Query.oldBooks"}, []string{`<i>use</i> "books"`})
	plain := shapedOp("Plain", 0xd, []string{"Book.title", "Query.books"}, nil, nil)
	m := NewOperationMeter(0, 0)
	flushOps(t, pool, m, "key_1", "org_a", books, 3, at)
	flushOps(t, pool, m, "key_2", "org_a", books, 2, at)
	flushOps(t, pool, m, "key_2", "org_a", shelf, 4, at)
	flushOps(t, pool, m, "key_1", "org_a", plain, 9, at)
	flushOps(t, pool, m, "key_9", "org_b", shelf, 50, at)

	if got, want := reasonsOf(t, pool, books.DocumentHash), []string{"Book.title", "Query.books",
		"Query.books(legacy:)=use first", `Query.oldBooks=<i>use</i> "books"`}; !slices.Equal(got, want) {
		t.Fatalf("rows of Books %q, want %q (NULL for the coordinates not deprecated)", got, want)
	}
	got, err := DeprecatedUse(ctx, pool, "org_a", 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d coordinates: %+v", len(got), got)
	}
	old, legacy := got[0], got[1]
	if old.Coordinate != "Query.oldBooks" || old.Reason != `<i>use</i> "books"` || old.Requests != 9 || old.Keys != 2 ||
		len(old.Operations) != 2 || old.Operations[0] != (OperationRef{Hash: books.DocumentHash, Name: "Books", Requests: 5}) ||
		old.Operations[1] != (OperationRef{Hash: shelf.DocumentHash, Name: "Shelf", Requests: 4}) || old.LastSeen.IsZero() {
		t.Errorf("Query.oldBooks: %+v", old)
	}
	if legacy.Coordinate != "Query.books(legacy:)" || legacy.Reason != "use first" || legacy.Requests != 5 || legacy.Keys != 2 ||
		len(legacy.Operations) != 1 {
		t.Errorf("Query.books(legacy:): %+v", legacy)
	}
	b, err := DeprecatedUse(ctx, pool, "org_b", 24*time.Hour, now)
	if err != nil || len(b) != 1 || b[0].Requests != 50 || b[0].Keys != 1 || len(b[0].Operations) != 1 || b[0].Operations[0].Name != "Shelf" {
		t.Errorf("org_b: %+v %v", b, err)
	}
	// the window: two days later, the last hour holds none of it
	if later, err := DeprecatedUse(ctx, pool, "org_a", time.Hour, now.Add(48*time.Hour)); err != nil || len(later) != 0 {
		t.Errorf("two days later: %+v %v", later, err)
	}
	if _, err := DeprecatedUse(ctx, pool, "", time.Hour, now); err == nil {
		t.Error("no organization: no error")
	}
}

// TestDeprecationReasonAfterReload: an operation recorded before the
// schema deprecated one of its coordinates gets the reason from its next
// record — from the same meter within the hour (the shape changed), and
// from another gateway's — and a later schema that lifts the deprecation or
// changes the reason is recorded the same way.
func TestDeprecationReasonAfterReload(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := time.Now()
	at := now.Add(-time.Minute)
	coords := []string{"Book.title", "Query.books"}
	before := shapedOp("Books", 0xb, coords, nil, nil)
	m := NewOperationMeter(0, 0)
	flushOps(t, pool, m, "key_1", "org_a", before, 1, at)
	if got, err := DeprecatedUse(ctx, pool, "org_a", time.Hour, now); err != nil || len(got) != 0 {
		t.Fatalf("before the reload: %+v %v", got, err)
	}
	// the reload: the document compiles again, to a shape deprecating Query.books
	after := shapedOp("Books", 0xb, coords, []string{"Query.books"}, []string{"use shelves"})
	flushOps(t, pool, m, "key_1", "org_a", after, 1, at.Add(time.Second))
	if got, want := reasonsOf(t, pool, after.DocumentHash), []string{"Book.title", "Query.books=use shelves"}; !slices.Equal(got, want) {
		t.Fatalf("after the reload, the same meter in the same hour: %q, want %q", got, want)
	}
	got, err := DeprecatedUse(ctx, pool, "org_a", time.Hour, now)
	if err != nil || len(got) != 1 || got[0].Reason != "use shelves" || got[0].Requests != 2 {
		t.Fatalf("after the reload: %+v %v", got, err)
	}
	// the same shape again in the hour queues no record
	m.Add(&OperationSample{KeyID: "key_1", Org: fixedOrgSource("org_a"), At: at, Operation: after})
	if _, recs := m.Drain(); len(recs) != 0 {
		t.Errorf("an unchanged shape queued %d records again within the hour", len(recs))
	}
	// another gateway's schema changes the reason, then a third lifts it
	reworded := shapedOp("Books", 0xb, coords, []string{"Query.books"}, []string{"use shelves(first:)"})
	flushOps(t, pool, NewOperationMeter(0, 0), "key_2", "org_a", reworded, 1, at)
	if got := reasonsOf(t, pool, after.DocumentHash); !slices.Equal(got, []string{"Book.title", "Query.books=use shelves(first:)"}) {
		t.Fatalf("a changed reason: %q", got)
	}
	flushOps(t, pool, NewOperationMeter(0, 0), "key_2", "org_a", before, 1, at)
	if got, err := DeprecatedUse(ctx, pool, "org_a", time.Hour, now); err != nil || len(got) != 0 {
		t.Fatalf("after the deprecation is lifted: %+v %v", got, err)
	}
	// a record without a shape (before the guard computed shapes) changes nothing
	flushOps(t, pool, NewOperationMeter(0, 0), "key_2", "org_a", reworded, 1, at)
	bare := &contract.GraphQLOperation{Type: "query", Name: "Books", DocumentHash: after.DocumentHash}
	flushOps(t, pool, NewOperationMeter(0, 0), "key_3", "org_a", bare, 1, at)
	if got := reasonsOf(t, pool, after.DocumentHash); !slices.Equal(got, []string{"Book.title", "Query.books=use shelves(first:)"}) {
		t.Fatalf("after a record without shape: %q", got)
	}
}
