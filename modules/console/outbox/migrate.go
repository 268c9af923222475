package outbox

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Ledger is the outbox's migrations and where they are recorded.
func Ledger() pgmigrate.Ledger {
	return pgmigrate.Ledger{
		Table: "civicgate.mail_outbox_migrations",
		Files: pgmigrate.Sub(migrationFiles, "migrations"),
	}
}

// Migrate creates or upgrades civicgate.mail_outbox; idempotent and safe to
// run concurrently. It has no foreign keys.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pgmigrate.Migrate(ctx, pool, Ledger()); err != nil {
		return fmt.Errorf("outbox: migrate: %w", err)
	}
	return nil
}
