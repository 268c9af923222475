package usage

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Ledger is the usage tables' migrations and where they are recorded. They
// were versions 2, 6 and 7 of the key store's old ledger
// (civicgate.civic_auth_migrations), handed over on the first run
// (docs/design.md D60).
func Ledger() pgmigrate.Ledger {
	return pgmigrate.Ledger{
		Table: "civicgate.usage_migrations",
		Files: pgmigrate.Sub(migrationFiles, "migrations"),
		// file version → the old ledger's version that made it
		Handover: &pgmigrate.Handover{From: "civicgate.civic_auth_migrations", Versions: map[int]int{1: 2, 2: 6, 3: 7}},
	}
}

// Migrate creates or upgrades the usage tables (usage_minute, usage_hour,
// usage_flushes, usage_operation_hour, usage_operation_org_hour,
// usage_operation_keys, operations, operation_coordinates, quota_crossings)
// in schema civicgate; it is idempotent and safe to run
// concurrently. They have no foreign keys, so it needs no other owner's.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pgmigrate.Migrate(ctx, pool, Ledger()); err != nil {
		return fmt.Errorf("usage: migrate: %w", err)
	}
	return nil
}
