// Package pgmigrate applies a package's embedded SQL migrations to PostgreSQL
// and records them in that package's own ledger table: the one runner of
// every table owner of the gateway (docs/design.md D60). It imports no Caddy.
//
// Migrations are files NNNN_name.sql at the root of an fs.FS (an embed.FS
// sub-tree), applied in version order, each once. One call applies every
// file the ledger lacks in one transaction — all of them or none — under a
// transaction-scoped advisory lock on the ledger's name, so gateways started
// at once migrate once and the others find the work done.
package pgmigrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ledger is one owner's migrations and where they are recorded.
type Ledger struct {
	// Table is the ledger, schema-qualified ("civicgate.keystore_migrations"):
	// version int PRIMARY KEY, name text (the file's name), applied_at.
	// Its schema is created if missing. The advisory lock is
	// hashtext(Table), the key the hand-written runners before this one took.
	Table string
	// Files holds the migrations, NNNN_name.sql at its root.
	Files fs.FS
	// Handover, when set, seeds the ledger from an older one the first time
	// it is created (see Handover).
	Handover *Handover
}

// Handover takes over versions recorded in an older ledger that another
// runner kept, so that a database that runner built is not migrated again.
// When the ledger has no row yet and From exists, each file version whose
// effects an older version made is recorded as applied if From lists that
// older version, with From's applied_at; what From does not list is then
// applied as usual. From's advisory lock (hashtext(From)) is held too, so
// the older runner cannot write From meanwhile.
type Handover struct {
	// From is the older ledger, schema-qualified, with columns version int
	// and applied_at timestamptz.
	From string
	// Versions maps a file version to the version of From that made its
	// effects.
	Versions map[int]int
}

// Migration is one file.
type Migration struct {
	Version int
	Name    string // the file's name, as the ledger records it
	SQL     string
}

var fileName = regexp.MustCompile(`^([0-9]+)_[a-z0-9_]+\.sql$`)

// Load reads the migrations of files in version order. Every file at the
// root must be named NNNN_name.sql with a version above 0, no two with the
// same version.
func Load(files fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("pgmigrate: file %q is not NNNN_name.sql", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("pgmigrate: file %q: the version must be a number above 0", e.Name())
		}
		body, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return nil, fmt.Errorf("pgmigrate: read %q: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("pgmigrate: %s and %s have the same version", out[i-1].Name, out[i].Name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("pgmigrate: no migrations")
	}
	return out, nil
}

// Migrate applies the migrations of l the ledger does not list, in version
// order, in one transaction, and returns their versions (none: up to date).
// It is safe to run concurrently and again.
func Migrate(ctx context.Context, pool *pgxpool.Pool, l Ledger) ([]int, error) {
	all, err := Load(l.Files)
	if err != nil {
		return nil, err
	}
	table, err := identifier(l.Table)
	if err != nil {
		return nil, err
	}
	if err := ensureSchema(ctx, pool, table[0]); err != nil {
		return nil, err
	}
	var applied []int
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, l.Table); err != nil {
			return fmt.Errorf("pgmigrate: lock %s: %w", l.Table, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table.Sanitize()+` (
			version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("pgmigrate: create %s: %w", l.Table, err)
		}
		have, err := versions(ctx, tx, table)
		if err != nil {
			return fmt.Errorf("pgmigrate: read %s: %w", l.Table, err)
		}
		if len(have) == 0 && l.Handover != nil {
			if have, err = handOver(ctx, tx, table, all, *l.Handover); err != nil {
				return err
			}
		}
		for _, m := range all {
			if _, done := have[m.Version]; done {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("pgmigrate: %s %s: %w", l.Table, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table.Sanitize()+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("pgmigrate: record %s in %s: %w", m.Name, l.Table, err)
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// handOver seeds an empty ledger from h.From (see Handover) and returns the
// versions it recorded.
func handOver(ctx context.Context, tx pgx.Tx, table pgx.Identifier, all []Migration, h Handover) (map[int]time.Time, error) {
	from, err := identifier(h.From)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, h.From); err != nil {
		return nil, fmt.Errorf("pgmigrate: lock %s: %w", h.From, err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, from.Sanitize()).Scan(&exists); err != nil {
		return nil, fmt.Errorf("pgmigrate: look for %s: %w", h.From, err)
	}
	if !exists {
		return map[int]time.Time{}, nil
	}
	old, err := versions(ctx, tx, from)
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: read %s: %w", h.From, err)
	}
	for v := range h.Versions {
		if !slices.ContainsFunc(all, func(m Migration) bool { return m.Version == v }) {
			return nil, fmt.Errorf("pgmigrate: the handover from %s names version %d, which has no file", h.From, v)
		}
	}
	seeded := map[int]time.Time{}
	for _, m := range all {
		ov, mapped := h.Versions[m.Version]
		at, made := old[ov]
		if !mapped || !made {
			continue
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+table.Sanitize()+` (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.Version, m.Name, at); err != nil {
			return nil, fmt.Errorf("pgmigrate: hand %s over from %s: %w", m.Name, h.From, err)
		}
		seeded[m.Version] = at
	}
	return seeded, nil
}

// versions reads a ledger: version → applied_at.
func versions(ctx context.Context, tx pgx.Tx, table pgx.Identifier) (map[int]time.Time, error) {
	rows, err := tx.Query(ctx, `SELECT version, applied_at FROM `+table.Sanitize())
	if err != nil {
		return nil, err
	}
	out := map[int]time.Time{}
	var v int
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&v, &at}, func() error {
		out[v] = at
		return nil
	})
	return out, err
}

// ensureSchema creates schema unless it exists. It runs before the ledger's
// transaction and lock: owners with different ledgers share a schema, and
// two concurrent CREATE SCHEMA IF NOT EXISTS can still collide, which is
// taken as done.
func ensureSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return fmt.Errorf("pgmigrate: look for schema %s: %w", schema, err)
	}
	if exists {
		return nil
	}
	_, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P06") {
		return nil // unique_violation or duplicate_schema: created by a concurrent run
	}
	if err != nil {
		return fmt.Errorf("pgmigrate: create schema %s: %w", schema, err)
	}
	return nil
}

// identifier splits "schema.table".
func identifier(name string) (pgx.Identifier, error) {
	schema, table, ok := strings.Cut(name, ".")
	if !ok || schema == "" || table == "" || strings.Contains(table, ".") {
		return nil, fmt.Errorf("pgmigrate: ledger %q is not schema.table", name)
	}
	return pgx.Identifier{schema, table}, nil
}

// Sub is fs.Sub for a migrations directory of an embed.FS, for a Ledger's
// Files: it panics on a bad directory name, a programming error.
func Sub(files fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic(fmt.Sprintf("pgmigrate: %v", err))
	}
	return sub
}
