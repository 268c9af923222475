package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestBillsPlansWalkTheOrderIndex EXPLAINs the exact SQL Bills runs: first pages, filters and deep cursors
// must walk a keyset index (no sequential scan, no sort of the whole match set).
func TestBillsPlansWalkTheOrderIndex(t *testing.T) {
	ctx := context.Background()
	pool := migratedPool(t, 0)
	if _, err := pool.Exec(ctx, `INSERT INTO bills (id, congress, type, number, official_title, introduced_date, committee_names)
		SELECT (ARRAY['hr','s'])[1 + g % 2] || g || '-' || (93 + g % 27), 93 + g % 27, (ARRAY['hr','s'])[1 + g % 2], g,
		       'A bill on ' || (ARRAY['water','veterans','energy'])[1 + g % 3], CASE WHEN g % 50 = 0 THEN NULL ELSE DATE '1973-01-01' + (g % 18000) END, ''
		FROM generate_series(1, 30000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE bills`); err != nil {
		t.Fatal(err)
	}
	codec, _ := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	s := New(pool, codec)
	deep := func(in records.BillsInput) records.BillsInput {
		n := 100
		in.Limit = &n
		for i := 0; i < 5; i++ {
			p, err := s.Bills(ctx, in)
			if err != nil || p.NextCursor == nil {
				t.Fatalf("walk: %v", err)
			}
			in.Cursor = p.NextCursor
		}
		in.Limit = nil
		return in
	}
	c118, hr := 118, "hr"
	for name, in := range map[string]records.BillsInput{
		"first page":     {},
		"deep page":      deep(records.BillsInput{}),
		"congress":       {Congress: &c118},
		"congress+type":  {Congress: &c118, Type: &hr},
		"type deep page": deep(records.BillsInput{Type: &hr}),
	} {
		sql, args, _, _, err := s.billsQuery(in)
		if err != nil {
			t.Fatal(err)
		}
		var plan []map[string]any
		if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		b, _ := json.Marshal(plan)
		text := string(b)
		if strings.Contains(text, `"Seq Scan"`) || strings.Contains(text, `"Node Type":"Sort"`) || !strings.Contains(text, `"Index Name":"bills_`) {
			t.Errorf("%s: plan does not walk a keyset index: %s", name, text)
		}
	}
}

// migratedPool is a pool configured as recordsd's (ConfigurePool) on a fresh migrated database, closed when the
// test ends; maxConns 0 keeps pgxpool's default.
func migratedPool(t *testing.T, maxConns int32) *pgxpool.Pool {
	t.Helper()
	return migratedtest.PoolWith(t, func(cfg *pgxpool.Config) {
		ConfigurePool(cfg)
		if maxConns > 0 {
			cfg.MaxConns = maxConns
		}
	})
}
