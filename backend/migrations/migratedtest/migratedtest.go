// Package migratedtest gives tests a pool on a throwaway PostgreSQL database
// (internal/testkit/testenv) with recordsd's migrations applied.
package migratedtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// Pool opens a pool on a new migrated database; both go away when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolWith(t, nil)
}

// PoolWith is Pool with configure (when not nil) applied to the pool's
// configuration before it opens: recordsd's session settings, a tracer, a
// connection bound.
func PoolWith(t testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrations.Apply(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}
