package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/contract"
)

// seedOperations writes, an hour before now: org_a's key_1 ran Books
// (Query.books, Book.title) 3 times and Author (Query.author,
// Author.name) once; key_2 ran Books twice; org_b's key_9 ran Author 5
// times; and key_1 ran Old 7 times two days before now.
func seedOperations(t *testing.T, pool *pgxpool.Pool, now time.Time) (books, author *contract.GraphQLOperation) {
	t.Helper()
	books = &contract.GraphQLOperation{Type: "query", Name: "Books", DocumentHash: fmt.Sprintf("%064x", 0xb),
		Shape: &contract.OperationShape{Coordinates: []string{"Book.title", "Query.books"}, Normalized: "query Books{books{title}}"}}
	author = &contract.GraphQLOperation{Type: "query", Name: "Author", DocumentHash: fmt.Sprintf("%064x", 0xa),
		Shape: &contract.OperationShape{Coordinates: []string{"Author.name", "Query.author"}, Normalized: `query Author{author(id:""){name}}`}}
	old := &contract.GraphQLOperation{Type: "mutation", Name: "Old", DocumentHash: fmt.Sprintf("%064x", 0x0)}
	m := NewOperationMeter(0, 0)
	at := now.Add(-time.Hour)
	for _, c := range []struct {
		key, org string
		op       *contract.GraphQLOperation
		n        int
		at       time.Time
	}{{"key_1", "org_a", books, 3, at}, {"key_1", "org_a", author, 1, at}, {"key_2", "org_a", books, 2, at},
		{"key_9", "org_b", author, 5, at}, {"key_1", "org_a", old, 7, now.Add(-48 * time.Hour)}} {
		for i := range c.n {
			m.Add(&OperationSample{KeyID: c.key, Org: fixedOrgSource(c.org), At: c.at, Operation: c.op, Error: i == 0 && c.n == 2,
				Cost: 2, Latency: time.Duration(i+1) * 10 * time.Millisecond})
		}
	}
	ops, recs := m.Drain()
	if _, err := WriteFlush(context.Background(), pool, NewBatchID(), Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
	return books, author
}

func TestOperationQueries(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := time.Now()
	books, author := seedOperations(t, pool, now)
	day := OperationsArgs{Org: "org_a", Since: 24 * time.Hour, Now: now}

	t.Run("operations", func(t *testing.T) {
		got, err := Operations(ctx, pool, day)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d rows: %+v", len(got), got)
		}
		first := got[0]
		if first.KeyID != "key_1" || first.Name != "Books" || first.Requests != 3 || first.Cost != 6 || first.Hash != books.DocumentHash ||
			first.P50 != 32*time.Millisecond || first.P95 != 32*time.Millisecond {
			t.Fatalf("first %+v", first)
		}
		if got[1].KeyID != "key_2" || got[1].Errors != 1 || got[2].Name != "Author" {
			t.Fatalf("rows %+v", got)
		}
		one, err := Operations(ctx, pool, OperationsArgs{Org: "org_a", KeyID: "key_2", Since: 24 * time.Hour, Now: now})
		if err != nil || len(one) != 1 || one[0].KeyID != "key_2" {
			t.Fatalf("key filter: %+v %v", one, err)
		}
		week, err := Operations(ctx, pool, OperationsArgs{Org: "org_a", Since: 7 * 24 * time.Hour, Now: now})
		if err != nil || len(week) != 4 || week[0].Name != "Old" {
			t.Fatalf("a week: %+v %v", week, err)
		}
		if _, err := Operations(ctx, pool, OperationsArgs{Org: "org_none", Since: time.Hour}); !errors.Is(err, ErrUnknownOrg) {
			t.Fatalf("unknown org: %v", err)
		}
		if _, err := Operations(ctx, pool, OperationsArgs{Org: "org_a"}); !errors.Is(err, ErrBadQuery) {
			t.Fatalf("no since: %v", err)
		}
	})

	t.Run("fields", func(t *testing.T) {
		got, err := FieldsOf(ctx, pool, day)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range got {
			names = append(names, fmt.Sprintf("%s=%d/%d", f.Coordinate, f.Requests, f.Operations))
		}
		want := []string{"Book.title=5/1", "Query.books=5/1", "Author.name=1/1", "Query.author=1/1"}
		if !slices.Equal(names, want) {
			t.Fatalf("fields %v, want %v", names, want)
		}
		// an organization sees only its own: org_b's 5 Author requests are not org_a's
		b, err := FieldsOf(ctx, pool, OperationsArgs{Org: "org_b", Since: 24 * time.Hour, Now: now})
		if err != nil || len(b) != 2 || b[0].Requests != 5 {
			t.Fatalf("org_b fields %+v %v", b, err)
		}
	})

	t.Run("coordinate users", func(t *testing.T) {
		got, err := CoordinateUsers(ctx, pool, "Query.author", 24*time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].OrgID != "org_b" || got[0].Requests != 5 || got[1].KeyID != "key_1" || got[1].Requests != 1 {
			t.Fatalf("users %+v", got)
		}
	})

	t.Run("unused", func(t *testing.T) {
		got, err := Unused(ctx, pool, []string{"Query.books", "Query.author", "Query.ghost", "Book.isbn", "Book.title"}, 24*time.Hour, now)
		if err != nil || !slices.Equal(got, []string{"Book.isbn", "Query.ghost"}) {
			t.Fatalf("unused %v %v", got, err)
		}
	})

	t.Run("recorded operations", func(t *testing.T) {
		got, err := RecordedOperations(ctx, pool, now.Add(-24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Hash != author.DocumentHash || got[1].Hash != books.DocumentHash {
			t.Fatalf("recorded %+v", got)
		}
		a := got[0]
		if a.Name != "Author" || a.Type != "query" || a.Normalized != author.Shape.Normalized || len(a.Keys) != 2 ||
			a.Keys[0] != (OperationKey{OrgID: "org_a", KeyID: "key_1", Requests: 1, LastSeen: a.Keys[0].LastSeen}) || a.Keys[1].Requests != 5 {
			t.Fatalf("author %+v", a)
		}
	})
}

// TestRecordedOperationsWithoutShape: an operation counted before the guard
// computed shapes is recorded with an empty text; other is left out.
func TestRecordedOperationsWithoutShape(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	m := NewOperationMeter(0, 1)
	now := time.Now()
	for i := range 3 {
		m.Add(&OperationSample{KeyID: "k", Org: fixedOrgSource("o"), At: now, Operation: testOp(i, nil)})
	}
	ops, recs := m.Drain()
	if _, err := WriteFlush(ctx, pool, NewBatchID(), Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
	got, err := RecordedOperations(ctx, pool, now.Add(-time.Hour))
	if err != nil || len(got) != 1 || got[0].Normalized != "" || got[0].Name != "Op0" || got[0].Keys[0].Requests != 1 {
		t.Fatalf("recorded %+v %v", got, err)
	}
}
