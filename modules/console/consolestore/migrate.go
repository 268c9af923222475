package consolestore

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/outbox"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Ledger is the console's migrations (sign-in links, sessions, OIDC flows)
// and where they are recorded. They were part of version 4 of the key
// store's old ledger, handed over on the first run (docs/design.md D60).
func Ledger() pgmigrate.Ledger {
	return pgmigrate.Ledger{
		Table: "civicgate.console_migrations",
		Files: pgmigrate.Sub(migrationFiles, "migrations"),
		// file version → the old ledger's version that made it
		Handover: &pgmigrate.Handover{From: keystore.OldLedger, Versions: map[int]int{1: 4}},
	}
}

// Migrate creates or upgrades every table the console reads or writes: the
// key store's first (the console's tables refer to its organizations), the
// usage tables its charts read, then its own. Idempotent and safe to run
// concurrently; each owner's tables commit on their own.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if err := keystore.Migrate(ctx, pool); err != nil {
		return err
	}
	if err := usage.Migrate(ctx, pool); err != nil {
		return err
	}
	if _, err := pgmigrate.Migrate(ctx, pool, Ledger()); err != nil {
		return fmt.Errorf("consolestore: migrate: %w", err)
	}
	return outbox.Migrate(ctx, pool) // the sign-up mails (docs/design.md D74)
}
