package store

import (
	"context"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/records"
)

// TestUnfilteredPagesSettleOnAGenericPlan: on one connection, an unfiltered second page of bills read eight
// times is a prepared statement PostgreSQL has switched to its generic plan (no planning per request), while a
// congress page read eight times leaves no prepared statement: it was planned for its value each time
// (plans.go).
func TestUnfilteredPagesSettleOnAGenericPlan(t *testing.T) {
	ctx := context.Background()
	pool := migratedPool(t, 1) // the prepared statements below are the connection's
	if _, err := pool.Exec(ctx, `INSERT INTO bills (id, congress, type, number, official_title, introduced_date, committee_names)
		SELECT 'hr' || g || '-' || (100 + g % 20), 100 + g % 20, 'hr', g, 'A bill ' || g, DATE '2001-01-01' + g, ''
		FROM generate_series(1, 2000) g`); err != nil {
		t.Fatal(err)
	}
	codec, _ := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	s := New(pool, codec)
	c118 := 118
	first, err := s.Bills(ctx, records.BillsInput{})
	if err != nil || first.NextCursor == nil {
		t.Fatalf("first page: %v", err)
	}
	for range 8 {
		// the second page: its cursor keys are parameters (a page without any is always generic)
		if p, err := s.Bills(ctx, records.BillsInput{Cursor: first.NextCursor}); err != nil || len(p.Items) != 25 {
			t.Fatalf("unfiltered page: %d items, %v", len(p.Items), err)
		}
		p, err := s.Bills(ctx, records.BillsInput{Congress: &c118})
		if err != nil || len(p.Items) != 25 {
			t.Fatalf("congress page: %d items, %v", len(p.Items), err)
		}
		for _, b := range p.Items {
			if b.Congress != 118 {
				t.Fatalf("congress page holds a bill of congress %d", b.Congress)
			}
		}
	}
	rows, err := pool.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	unfiltered := false
	for rows.Next() {
		var stmt string
		var generic, custom int64
		if err := rows.Scan(&stmt, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stmt, "congress =") {
			t.Errorf("the congress page is a prepared statement (%d generic, %d custom plans): %s", generic, custom, stmt)
		}
		if strings.Contains(stmt, "FROM bills") && strings.Contains(stmt, "$1") && !strings.Contains(stmt, "congress =") {
			unfiltered = true
			if generic == 0 {
				t.Errorf("the unfiltered page never ran its generic plan (%d custom plans): %s", custom, stmt)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !unfiltered {
		t.Fatal("the unfiltered page left no prepared statement")
	}
}
