// Package migrations holds recordsd's embedded, ordered, idempotent SQL migrations and applies them.
//
// Files in sql/ are named NNNN_name.sql and applied in numeric order, each in its own transaction, and
// recorded in schema_migrations. A PostgreSQL advisory lock serialises concurrent `recordsd migrate` runs.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed sql/*.sql
var files embed.FS

// advisoryLockKey is an arbitrary constant identifying recordsd migrations in pg_advisory_lock.
const advisoryLockKey = 7_240_118_002

// Migration is one embedded SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns the embedded migrations in version order.
func All() ([]Migration, error) {
	entries, err := fs.ReadDir(files, "sql")
	if err != nil {
		return nil, fmt.Errorf("migrations: read embedded dir: %w", err)
	}
	out := make([]Migration, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		if !ok {
			return nil, fmt.Errorf("migrations: file %q is not NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migrations: file %q: version: %w", name, err)
		}
		body, err := files.ReadFile("sql/" + name)
		if err != nil {
			return nil, fmt.Errorf("migrations: read %q: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations: duplicate version %d", out[i].Version)
		}
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
	all, err := All()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: acquire connection: %w", err)
	}
	defer conn.Release()
	// A session lock serialises concurrent runs, including the CREATE TABLE of schema_migrations itself.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(advisoryLockKey)); err != nil {
		return nil, fmt.Errorf("migrations: lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(advisoryLockKey))
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrations: create schema_migrations: %w", err)
	}
	var applied []int
	for _, m := range all {
		did, err := applyOne(ctx, conn.Conn(), m)
		if err != nil {
			return applied, err
		}
		if did {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
}

func applyOne(ctx context.Context, conn *pgx.Conn, m Migration) (bool, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("migrations: begin %04d: %w", m.Version, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&exists); err != nil {
		return false, fmt.Errorf("migrations: check %04d: %w", m.Version, err)
	}
	if exists {
		return false, nil
	}
	// Simple protocol: a migration file holds several statements.
	if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		return false, fmt.Errorf("migrations: apply %04d_%s: %w", m.Version, m.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return false, fmt.Errorf("migrations: record %04d: %w", m.Version, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("migrations: commit %04d: %w", m.Version, err)
	}
	return true, nil
}
