// Package migrations holds recordsd's embedded, ordered, idempotent SQL migrations and applies them.
//
// Files in sql/ are named NNNN_name.sql and applied in numeric order by the gateway's one migration runner,
// internal/pgmigrate (docs/design.md D60): every file the ledger public.schema_migrations lacks, in one
// transaction under an advisory lock, so concurrent `recordsd migrate` runs migrate once.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
)

//go:embed sql/*.sql
var files embed.FS

// ledger is recordsd's: public.schema_migrations(version, name, applied_at). Rows written by the runner
// before pgmigrate name a file without its number and ".sql"; only the version is ever read.
var ledger = pgmigrate.Ledger{Table: "public.schema_migrations", Files: pgmigrate.Sub(files, "sql")}

// Migration is one embedded SQL file.
type Migration struct {
	Version int
	Name    string // the file's name without its number and ".sql"
	SQL     string
}

// All returns the embedded migrations in version order.
func All() ([]Migration, error) {
	all, err := pgmigrate.Load(ledger.Files)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	out := make([]Migration, 0, len(all))
	for _, m := range all {
		_, name, _ := strings.Cut(strings.TrimSuffix(m.Name, ".sql"), "_")
		out = append(out, Migration{Version: m.Version, Name: name, SQL: m.SQL})
	}
	return out, nil
}

// Apply applies every migration not yet recorded in schema_migrations. It is safe to run repeatedly and
// concurrently.
func Apply(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := ApplyVersions(ctx, pool)
	return err
}

// ApplyVersions is Apply that also returns the versions it applied (empty when up to date).
func ApplyVersions(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	applied, err := pgmigrate.Migrate(ctx, pool, ledger)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return applied, nil
}
