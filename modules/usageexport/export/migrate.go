package export

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Ledger is the export tables' migrations and where they are recorded.
func Ledger() pgmigrate.Ledger {
	return pgmigrate.Ledger{
		Table: "civicgate.usage_export_migrations",
		Files: pgmigrate.Sub(migrationFiles, "migrations"),
	}
}

// Migrate creates or upgrades the export's tables (usage_export_cursors,
// usage_export_batches) in schema civicgate; idempotent and safe to run
// concurrently. The usage tables it reads are usage.Migrate's.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pgmigrate.Migrate(ctx, pool, Ledger()); err != nil {
		return fmt.Errorf("export: migrate: %w", err)
	}
	return nil
}
