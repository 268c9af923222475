package notices

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Ledger is the notices' migrations and where they are recorded.
func Ledger() pgmigrate.Ledger {
	return pgmigrate.Ledger{
		Table: "civicgate.mail_notices_migrations",
		Files: pgmigrate.Sub(migrationFiles, "migrations"),
	}
}

// Migrate creates or upgrades civicgate.mail_notices; idempotent and safe
// to run concurrently. It has no foreign keys (an organization deleted
// keeps its rows, which name only its id).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pgmigrate.Migrate(ctx, pool, Ledger()); err != nil {
		return fmt.Errorf("notices: migrate: %w", err)
	}
	return nil
}
