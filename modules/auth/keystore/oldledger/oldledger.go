// Package oldledger builds, for tests, a database as the gateway built it
// before each table had its owner (docs/design.md D60): the key store alone
// migrated every gateway table, versions 1–7 recorded in
// civicgate.civic_auth_migrations. sql/N.sql is version N, a frozen copy of
// the statements of that list; never change them.
package oldledger

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed sql/*.sql
var files embed.FS

// Versions is how many versions the old ledger had.
const Versions = 7

// Build applies versions 1 to upTo as the old runner did: schema civicgate,
// the ledger civicgate.civic_auth_migrations (version, applied_at), every
// version and its row in one transaction.
func Build(ctx context.Context, pool *pgxpool.Pool, upTo int) error {
	if upTo < 1 || upTo > Versions {
		return fmt.Errorf("oldledger: version %d is not 1 to %d", upTo, Versions)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS civicgate;
			CREATE TABLE IF NOT EXISTS civicgate.civic_auth_migrations (
				version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("oldledger: %w", err)
		}
		for v := 1; v <= upTo; v++ {
			sql, err := files.ReadFile(fmt.Sprintf("sql/%d.sql", v))
			if err != nil {
				return fmt.Errorf("oldledger: %w", err)
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("oldledger: version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO civicgate.civic_auth_migrations (version) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("oldledger: version %d: %w", v, err)
			}
		}
		return nil
	})
}
