package migrations_test

import (
	"context"
	"testing"

	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestApplyIsIdempotentAndTracked(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	all, err := migrations.All()
	if err != nil || len(all) == 0 {
		t.Fatalf("All: %v %d", err, len(all))
	}
	first, err := migrations.ApplyVersions(ctx, pool)
	if err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	if len(first) != len(all) {
		t.Fatalf("first Apply applied %v, want %d migrations", first, len(all))
	}
	second, err := migrations.ApplyVersions(ctx, pool)
	if err != nil || len(second) != 0 {
		t.Fatalf("second Apply = %v, %v; want nothing applied", second, err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(all) {
		t.Fatalf("schema_migrations rows = %d (%v), want %d", n, err, len(all))
	}
	for _, table := range []string{"bills", "members", "member_terms", "regulatory_filings", "federal_budget_lines", "lobbying_disclosures"} {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s missing (%v)", table, err)
		}
	}
}

func TestApplyConcurrently(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { errs <- migrations.Apply(ctx, pool) }()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Apply: %v", err)
		}
	}
}
