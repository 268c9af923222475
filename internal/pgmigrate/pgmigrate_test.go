package pgmigrate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func files(m map[string]string) fstest.MapFS {
	out := fstest.MapFS{}
	for name, sql := range m {
		out[name] = &fstest.MapFile{Data: []byte(sql)}
	}
	return out
}

type row struct {
	Version int
	Name    string
}

func ledgerRows(t *testing.T, pool *pgxpool.Pool, table string) []row {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT version, name FROM `+table+` ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Version, &r.Name); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestAppliesInVersionOrderOnce: files apply by version (10 after 2, though
// "0010" sorts before "002" by name), are recorded with their names, and a
// second call applies nothing; a file added later applies alone.
func TestAppliesInVersionOrderOnce(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	fsys := files(map[string]string{
		"0001_things.sql": `CREATE TABLE fresh.things (id int PRIMARY KEY);`,
		"2_more.sql":      `ALTER TABLE fresh.things ADD COLUMN name text; INSERT INTO fresh.things VALUES (1, 'one');`,
		"0010_index.sql":  `CREATE INDEX things_name ON fresh.things (name);`,
	})
	l := Ledger{Table: "fresh.ledger", Files: fsys}
	applied, err := Migrate(ctx, pool, l)
	if err != nil || !slices.Equal(applied, []int{1, 2, 10}) {
		t.Fatalf("first run: %v %v", applied, err)
	}
	want := []row{{1, "0001_things.sql"}, {2, "2_more.sql"}, {10, "0010_index.sql"}}
	if got := ledgerRows(t, pool, "fresh.ledger"); !slices.Equal(got, want) {
		t.Fatalf("ledger %v, want %v", got, want)
	}
	if applied, err := Migrate(ctx, pool, l); err != nil || len(applied) != 0 {
		t.Fatalf("second run: %v %v", applied, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM fresh.things`); n != 1 {
		t.Fatalf("%d rows: a migration ran twice", n)
	}
	fsys["0011_later.sql"] = &fstest.MapFile{Data: []byte(`INSERT INTO fresh.things VALUES (2, 'two');`)}
	if applied, err := Migrate(ctx, pool, l); err != nil || !slices.Equal(applied, []int{11}) {
		t.Fatalf("after a file was added: %v %v", applied, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM fresh.things`); n != 2 {
		t.Fatalf("%d rows after the later migration", n)
	}
}

// TestAllOrNothing: a failing file undoes every file of the call, the ledger
// too; once fixed, they all apply.
func TestAllOrNothing(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	fsys := files(map[string]string{
		"0001_a.sql": `CREATE TABLE public.a (id int);`,
		"0002_b.sql": `CREATE TABLE public.b (id int REFERENCES public.nowhere(id));`,
	})
	l := Ledger{Table: "public.ledger", Files: fsys}
	if _, err := Migrate(ctx, pool, l); err == nil || !strings.Contains(err.Error(), "0002_b.sql") {
		t.Fatalf("a failing file: %v", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('a', 'b', 'ledger')`); n != 0 {
		t.Fatalf("%d tables left by a failed call", n)
	}
	fsys["0002_b.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE public.b (id int);`)}
	if applied, err := Migrate(ctx, pool, l); err != nil || !slices.Equal(applied, []int{1, 2}) {
		t.Fatalf("after the fix: %v %v", applied, err)
	}
}

// TestConcurrentMigratorsMigrateOnce: gateways starting together run the
// same ledger at once, and ledgers of one new schema at once: each file runs
// once, every call succeeds.
func TestConcurrentMigratorsMigrateOnce(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	ledger := func(name string) Ledger {
		return Ledger{Table: "shared." + name + "_migrations", Files: files(map[string]string{
			"0001_t.sql": fmt.Sprintf(`CREATE TABLE shared.%s (n int); INSERT INTO shared.%s VALUES (1);`, name, name),
			"0002_u.sql": fmt.Sprintf(`INSERT INTO shared.%s VALUES (2);`, name),
		})}
	}
	const each = 4
	var wg sync.WaitGroup
	results := make(chan []int, 2*each)
	errs := make(chan error, 2*each)
	for range each {
		for _, name := range []string{"left", "right"} {
			wg.Go(func() {
				applied, err := Migrate(ctx, pool, ledger(name))
				results <- applied
				errs <- err
			})
		}
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ran := 0
	for applied := range results {
		switch {
		case slices.Equal(applied, []int{1, 2}):
			ran++
		case len(applied) != 0:
			t.Errorf("a run applied part of the files: %v", applied)
		}
	}
	if ran != 2 {
		t.Errorf("%d runs applied the files, want one per ledger", ran)
	}
	for _, name := range []string{"left", "right"} {
		if n := count(t, pool, `SELECT count(*) FROM shared.`+name); n != 2 {
			t.Errorf("shared.%s has %d rows: a file ran more or less than once", name, n)
		}
	}
}

// TestHandoverSeedsFromTheOlderLedger: a database whose older ledger lists
// versions 1 and 2 (made by another runner) gets the new ledger seeded with
// the files those versions made, keeping their applied_at; only the rest
// runs, and a second run or a second ledger does not seed again.
func TestHandoverSeedsFromTheOlderLedger(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	old := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA app;
		CREATE TABLE app.old_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
		CREATE TABLE app.kept (id int PRIMARY KEY); INSERT INTO app.kept VALUES (7);
		CREATE TABLE app.other (id int);`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO app.old_migrations VALUES (1, $1), (2, $1)`, old); err != nil {
		t.Fatal(err)
	}
	l := Ledger{Table: "app.new_migrations", Files: files(map[string]string{
		"0001_kept.sql": `CREATE TABLE app.kept (id int PRIMARY KEY);`,
		"0002_more.sql": `ALTER TABLE app.kept ADD COLUMN more text;`,
	}), Handover: &Handover{From: "app.old_migrations", Versions: map[int]int{1: 1, 2: 3}}}
	applied, err := Migrate(ctx, pool, l)
	if err != nil || !slices.Equal(applied, []int{2}) {
		t.Fatalf("handover: applied %v %v, want [2]", applied, err)
	}
	var at time.Time
	if err := pool.QueryRow(ctx, `SELECT applied_at FROM app.new_migrations WHERE version = 1`).Scan(&at); err != nil || !at.Equal(old) {
		t.Errorf("seeded version 1 applied_at %v %v, want %v", at, err, old)
	}
	if n := count(t, pool, `SELECT count(*) FROM app.kept WHERE id = 7`); n != 1 {
		t.Error("the kept row is gone: version 1 ran again")
	}
	if applied, err := Migrate(ctx, pool, l); err != nil || len(applied) != 0 {
		t.Fatalf("second run: %v %v", applied, err)
	}
	// Versions of the older ledger another owner took over are none of this one's.
	l2 := Ledger{Table: "app.other_migrations", Files: files(map[string]string{
		"0001_other.sql": `CREATE TABLE app.other (id int);`,
	}), Handover: &Handover{From: "app.old_migrations", Versions: map[int]int{1: 2}}}
	if applied, err := Migrate(ctx, pool, l2); err != nil || len(applied) != 0 {
		t.Fatalf("second owner: %v %v", applied, err)
	}
	// Without the older ledger (a fresh database) nothing is seeded.
	fresh := newPool(t)
	if applied, err := Migrate(ctx, fresh, l); err != nil || !slices.Equal(applied, []int{1, 2}) {
		t.Fatalf("fresh database: %v %v", applied, err)
	}
	bad := l
	bad.Table = "app.bad_migrations"
	bad.Handover = &Handover{From: "app.old_migrations", Versions: map[int]int{9: 1}}
	if _, err := Migrate(ctx, pool, bad); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("a handover naming no file: %v", err)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"bad name":     files(map[string]string{"one.sql": ""}),
		"zero":         files(map[string]string{"0000_zero.sql": ""}),
		"same version": files(map[string]string{"0001_a.sql": "", "1_b.sql": ""}),
		"empty":        files(nil),
	} {
		if _, err := Load(fsys); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := identifier("no_schema"); err == nil {
		t.Error("a ledger without a schema was taken")
	}
	if _, err := Migrate(context.Background(), nil, Ledger{Table: "x", Files: files(map[string]string{"1_a.sql": ""})}); err == nil {
		t.Error("a ledger without a schema was migrated")
	}
}
