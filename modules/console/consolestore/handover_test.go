package consolestore

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/pgmigrate"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/auth/keystore/oldledger"
	"github.com/civicgate/civicgate/modules/console/outbox"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// The handover of docs/design.md D60 is tested here, on top: the console's
// Migrate runs every owner whose versions the key store's old ledger holds.

func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

type ledgerRow struct {
	Version   int
	Name      string
	AppliedAt time.Time
}

func ledgerOf(t *testing.T, pool *pgxpool.Pool, table string) []ledgerRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT version, name, applied_at FROM `+table+` ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ledgerRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func versionsOf(rows []ledgerRow) []int {
	var out []int
	for _, r := range rows {
		out = append(out, r.Version)
	}
	return out
}

func oldAppliedAt(t *testing.T, pool *pgxpool.Pool) map[int]time.Time {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT version, applied_at FROM civicgate.civic_auth_migrations`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]time.Time{}
	var v int
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&v, &at}, func() error { out[v] = at; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// schemaOf describes schema civicgate without the ledgers: every column,
// constraint and index, to compare two databases.
func schemaOf(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, q := range []string{
		`SELECT table_name || '.' || column_name || ' ' || data_type || ' null=' || is_nullable || ' default=' || coalesce(column_default, '-')
			FROM information_schema.columns WHERE table_schema = 'civicgate' AND table_name NOT LIKE '%migrations'`,
		`SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = 'civicgate'::regnamespace AND conrelid::regclass::text NOT LIKE '%migrations'`,
		`SELECT indexdef FROM pg_indexes WHERE schemaname = 'civicgate' AND tablename NOT LIKE '%migrations'`,
	} {
		rows, err := pool.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got...)
	}
	slices.Sort(out)
	return out
}

// withFile is ledger l with one more file.
func withFile(t *testing.T, l pgmigrate.Ledger, name, sql string) pgmigrate.Ledger {
	t.Helper()
	files := fstest.MapFS{name: &fstest.MapFile{Data: []byte(sql)}}
	if err := fs.WalkDir(l.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(l.Files, p)
		files[p] = &fstest.MapFile{Data: b}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	l.Files = files
	return l
}

// TestHandoverFromTheOldLedger: a database built as the gateway built it
// when the key store migrated every table (versions 1–7 of
// civicgate.civic_auth_migrations), with rows in it, is handed over in one
// run: every owner's ledger lists its versions with the old applied_at, no
// statement runs again (an "already exists" would fail the run, and the rows
// stay), the schema is the one a fresh database gets, and a migration added
// afterwards applies once.
func TestHandoverFromTheOldLedger(t *testing.T) {
	ctx := context.Background()
	pool := emptyPool(t)
	if err := oldledger.Build(ctx, pool, oldledger.Versions); err != nil {
		t.Fatal(err)
	}
	is := oldKey(t, pool, "acme")
	if err := keystore.Audit(ctx, pool, keystore.AuditEntry{Actor: "cli:old", Role: keystore.RoleOperator, OrgID: is.OrgID, Action: "key.issue"}); err != nil {
		t.Fatal(err)
	}
	// As the old gateway made it: CreateLink reads the key columns of the
	// key store's later files.
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.console_links (token_hash, org_id, email, role, created_by, expires_at)
		VALUES (sha256('old link'), $1, 'a@acme.org', 'admin', 'cli:old', now() + interval '1 hour')`, is.OrgID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.usage_minute (key_id, org_id, start, admitted, mcp_calls)
		VALUES ($1, $2, date_trunc('minute', now()), 5, 2)`, is.ID, is.OrgID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.usage_flushes (id) VALUES ('flush-1')`); err != nil {
		t.Fatal(err)
	}
	old := oldAppliedAt(t, pool)

	// Owners in any order: usage alone first, then the console's, which runs
	// the key store's, usage's (nothing left) and its own.
	if err := usage.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}

	for _, want := range []struct {
		table string
		old   map[int]int // version → the old version
		fresh int         // versions newer than the old ledger, applied by this run
	}{
		// keystore 5 on: the key lifecycle (docs/design.md D71), grants (D81), after the old ledger
		{"civicgate.keystore_migrations", map[int]int{1: 1, 2: 3, 3: 4, 4: 5}, len(fileVersions(t, keystore.Ledger())) - 4},
		// usage 4 on: operations (docs/design.md D70), their deprecation reasons (D77), their
		// sums per organization (D78), after the old ledger
		{"civicgate.usage_migrations", map[int]int{1: 2, 2: 6, 3: 7}, usageVersions(t) - 3},
		// console 2: self-serve sign-up (docs/design.md D74), after the old ledger
		{"civicgate.console_migrations", map[int]int{1: 4}, 1},
	} {
		rows := ledgerOf(t, pool, want.table)
		if len(rows) != len(want.old)+want.fresh {
			t.Errorf("%s lists %v, want the versions of %v and %d more", want.table, versionsOf(rows), want.old, want.fresh)
			continue
		}
		for _, r := range rows {
			if _, handed := want.old[r.Version]; !handed {
				continue
			}
			if at, ok := old[want.old[r.Version]]; !ok || !r.AppliedAt.Equal(at) {
				t.Errorf("%s version %d (%s) applied at %v, want the old version %d's %v", want.table, r.Version, r.Name, r.AppliedAt, want.old[r.Version], at)
			}
		}
	}
	if got := len(oldAppliedAt(t, pool)); got != oldledger.Versions {
		t.Errorf("the old ledger has %d rows, want it left as it was", got)
	}
	for what, q := range map[string]string{
		"keys":        `SELECT count(*) FROM civicgate.api_keys`,
		"audit":       `SELECT count(*) FROM civicgate.audit_log`,
		"links":       `SELECT count(*) FROM civicgate.console_links`,
		"usage":       `SELECT count(*) FROM civicgate.usage_minute WHERE mcp_calls = 2`,
		"usage flush": `SELECT count(*) FROM civicgate.usage_flushes`,
	} {
		var n int
		if err := pool.QueryRow(ctx, q).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: %d rows %v, want the one made before the handover", what, n, err)
		}
	}
	if r, err := keystore.Lookup(ctx, pool, keystore.HashKey(is.Key)); err != nil || r.KeyID != is.ID {
		t.Errorf("the key made before the handover: %+v %v", r, err)
	}

	fresh := emptyPool(t)
	if err := Migrate(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if got, want := schemaOf(t, pool), schemaOf(t, fresh); !slices.Equal(got, want) {
		t.Errorf("the handed-over schema differs from a fresh one:\nold database: %q\nfresh:        %q", got, want)
	}

	// A file after the key store's last, whatever that is.
	keysLater := slices.Max(fileVersions(t, keystore.Ledger())) + 1
	for _, l := range []pgmigrate.Ledger{
		withFile(t, keystore.Ledger(), fmt.Sprintf("%04d_later.sql", keysLater), `ALTER TABLE civicgate.api_keys ADD COLUMN note text NOT NULL DEFAULT ''`),
		withFile(t, Ledger(), "0003_later.sql", `ALTER TABLE civicgate.console_links ADD COLUMN note text NOT NULL DEFAULT ''`),
	} {
		later := keysLater
		if l.Table == "civicgate.console_migrations" {
			later = 3
		}
		if applied, err := pgmigrate.Migrate(ctx, pool, l); err != nil || !slices.Equal(applied, []int{later}) {
			t.Errorf("%s, a later file: applied %v %v, want [%d]", l.Table, applied, err, later)
		}
		if applied, err := pgmigrate.Migrate(ctx, pool, l); err != nil || len(applied) != 0 {
			t.Errorf("%s, the later file again: applied %v %v", l.Table, applied, err)
		}
	}
}

// oldKey inserts a live key of the organization named org, creating it, as
// the gateway of the old ledger did (its columns only: keystore.Issue writes
// the columns of the key store's later files).
func oldKey(t *testing.T, pool *pgxpool.Pool, org string) keystore.Issued {
	t.Helper()
	key, err := keystore.NewKey(keystore.EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	is := keystore.Issued{ID: "key_old" + org, OrgID: "org_old" + org, Key: key}
	h := keystore.HashKey(key)
	if _, err := pool.Exec(t.Context(), `INSERT INTO civicgate.organizations (id, name) VALUES ($1, $2)`, is.OrgID, org); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO civicgate.api_keys (id, org_id, env, tier, key_hash, key_prefix)
		VALUES ($1, $2, 'live', 'free', $3, $4)`, is.ID, is.OrgID, h[:], key[:keystore.PrefixLen]); err != nil {
		t.Fatal(err)
	}
	return is
}

// TestHandoverFromAnOlderDatabase: a database of an older gateway (old
// versions 1–3: keys, usage, rotation) gets the versions it lacks from each
// owner and no other.
func TestHandoverFromAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	pool := emptyPool(t)
	if err := oldledger.Build(ctx, pool, 3); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		ledger       pgmigrate.Ledger
		seeded, runs []int
	}{
		{keystore.Ledger(), []int{1, 2}, fileVersions(t, keystore.Ledger())[2:]},
		{usage.Ledger(), []int{1}, usageFileVersions(t)[1:]},
		{Ledger(), nil, []int{1, 2}},
	} {
		applied, err := pgmigrate.Migrate(ctx, pool, step.ledger)
		if err != nil || !slices.Equal(applied, step.runs) {
			t.Errorf("%s applied %v %v, want %v", step.ledger.Table, applied, err, step.runs)
		}
		if got, want := versionsOf(ledgerOf(t, pool, step.ledger.Table)), append(step.seeded, step.runs...); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", step.ledger.Table, got, want)
		}
	}
}

// TestMigrateFreshAndConcurrently: gateways and commands starting together on
// an empty database (console, keys and webhooks migrations at once) all
// succeed and leave each ledger complete, each file applied once.
func TestMigrateFreshAndConcurrently(t *testing.T) {
	ctx := context.Background()
	pool := emptyPool(t)
	runs := []func(context.Context, *pgxpool.Pool) error{Migrate, keystore.Migrate, usage.Migrate, store.Migrate}
	var wg sync.WaitGroup
	errs := make(chan error, 3*len(runs))
	for range 3 {
		for i, run := range runs {
			wg.Go(func() {
				if err := run(ctx, pool); err != nil {
					errs <- fmt.Errorf("migrator %d: %w", i, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Each ledger lists every file of its owner once.
	for _, l := range []pgmigrate.Ledger{keystore.Ledger(), usage.Ledger(), Ledger(), outbox.Ledger(), store.Ledger()} {
		if got, want := versionsOf(ledgerOf(t, pool, l.Table)), fileVersions(t, l); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", l.Table, got, want)
		}
	}
	var old bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('civicgate.civic_auth_migrations') IS NOT NULL`).Scan(&old); err != nil || old {
		t.Errorf("a fresh database has the old ledger: %v %v", old, err)
	}
}

// usageVersions is how many migration files the usage package embeds.
func usageVersions(t *testing.T) int { return len(usageFileVersions(t)) }

// usageFileVersions are the versions of the usage package's migration
// files, ascending.
func usageFileVersions(t *testing.T) []int { return fileVersions(t, usage.Ledger()) }

// fileVersions are the versions of a ledger's migration files, ascending
// (the NNNN of NNNN_name.sql).
func fileVersions(t *testing.T, l pgmigrate.Ledger) []int {
	t.Helper()
	files, err := fs.Glob(l.Files, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: %v %v", l.Table, files, err)
	}
	var out []int
	for _, f := range files {
		v, err := strconv.Atoi(f[:4])
		if err != nil {
			t.Fatalf("%s: migration %s: %v", l.Table, f, err)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
