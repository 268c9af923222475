package keystore

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// OldLedger is the ledger every gateway table was once migrated under, by
// the key store alone (versions 1–7, docs/design.md D60). It is read once,
// to hand its versions over to each table's owner, and never written again.
const OldLedger = "civicgate.civic_auth_migrations"

// Ledger is the key store's migrations (organizations, API keys, the audit
// log, the token deny list) and where they are recorded. A database built
// under OldLedger has its versions handed over on the first run.
func Ledger() pgmigrate.Ledger {
	return pgmigrate.Ledger{
		Table: "civicgate.keystore_migrations",
		Files: pgmigrate.Sub(migrationFiles, "migrations"),
		// file version → the OldLedger version that made it
		Handover: &pgmigrate.Handover{From: OldLedger, Versions: map[int]int{1: 1, 2: 3, 3: 4, 4: 5}},
	}
}

// Migrate creates or upgrades the key store's tables in schema civicgate;
// it is idempotent and safe to run concurrently. The usage tables and the
// console's are their owners' (usage.Migrate, consolestore.Migrate).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pgmigrate.Migrate(ctx, pool, Ledger()); err != nil {
		return fmt.Errorf("keystore: migrate: %w", err)
	}
	return nil
}
