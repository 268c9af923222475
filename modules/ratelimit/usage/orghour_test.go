package usage

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/civicgate/civicgate/internal/pgmigrate"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestOrgHoursSumTheKeys: every flush adds to the organization's sums what
// it adds to its keys' rows, so FieldsOf without a key (which reads the
// sums, docs/design.md D78) answers as the keys' rows add up.
func TestOrgHoursSumTheKeys(t *testing.T) {
	pool := newPool(t, migratedDB(t))
	ctx := context.Background()
	now := t0.Add(72 * time.Hour)
	books, _ := seedOperations(t, pool, now)
	var mismatched int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (
			SELECT org_id, start, op_hash, sum(requests) AS r, sum(errors) AS e, sum(cost) AS c, max(last_seen) AS l
			FROM civicgate.usage_operation_hour GROUP BY 1, 2, 3) k
		FULL JOIN civicgate.usage_operation_org_hour o USING (org_id, start, op_hash)
		WHERE o.requests IS DISTINCT FROM k.r OR o.errors IS DISTINCT FROM k.e OR o.cost IS DISTINCT FROM k.c
			OR o.last_seen IS DISTINCT FROM k.l`).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Fatalf("%d organization hours differ from their keys' sums", mismatched)
	}
	var books5 int64
	if err := pool.QueryRow(ctx, `SELECT requests FROM civicgate.usage_operation_org_hour WHERE org_id = 'org_a' AND op_hash = $1`,
		books.DocumentHash).Scan(&books5); err != nil || books5 != 5 {
		t.Fatalf("org_a's Books: %d requests (%v), want 3 of key_1 and 2 of key_2", books5, err)
	}
	fields, err := FieldsOf(ctx, pool, OperationsArgs{Org: "org_a", Since: 24 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, f := range fields {
		got[f.Coordinate] = f.Requests
	}
	if got["Query.books"] != 5 || got["Query.author"] != 1 || len(got) != 4 {
		t.Fatalf("org_a's fields %v", got)
	}
}

// TestOrgHoursFilledOnMigration: a database that recorded operations before
// the organization sums existed gets them from its rows when migrated.
func TestOrgHoursFilledOnMigration(t *testing.T) {
	dsn := testenv.Postgres(t)
	pool := newPool(t, dsn)
	ctx := context.Background()
	if err := keystore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	before := Ledger()
	old := fstest.MapFS{}
	if err := fs.WalkDir(before.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Compare(path, "0006") >= 0 {
			return err
		}
		b, err := fs.ReadFile(before.Files, path)
		old[path] = &fstest.MapFile{Data: b}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before.Files = old
	if _, err := pgmigrate.Migrate(ctx, pool, before); err != nil {
		t.Fatal(err)
	}
	h := t0.Truncate(time.Hour)
	if _, err := pool.Exec(ctx, `INSERT INTO civicgate.usage_operation_hour
		(key_id, org_id, start, op_hash, op_type, op_name, requests, errors, cost, latency_buckets, last_seen) VALUES
		('k1', 'o', $1, 'h', 'query', 'Q', 3, 1, 6, '{}', $1), ('k2', 'o', $1, 'h', 'query', 'Q', 4, 0, 8, '{}', $1 + interval '1 minute')`, h); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var r, e, c int64
	var last time.Time
	if err := pool.QueryRow(ctx, `SELECT requests, errors, cost, last_seen FROM civicgate.usage_operation_org_hour
		WHERE org_id = 'o' AND start = $1 AND op_hash = 'h'`, h).Scan(&r, &e, &c, &last); err != nil {
		t.Fatal(err)
	}
	if r != 7 || e != 1 || c != 14 || !last.Equal(h.Add(time.Minute)) {
		t.Fatalf("filled %d/%d/%d %v", r, e, c, last)
	}
	// 0008 (docs/design.md D83): the type, name and buckets, and each key's
	// last hour of the operation.
	var typ, name string
	var buckets []int64
	var keys int
	if err := pool.QueryRow(ctx, `SELECT op_type, op_name, latency_buckets,
			(SELECT count(*) FROM civicgate.usage_operation_keys WHERE org_id = 'o' AND op_hash = 'h' AND last_start = $1)
		FROM civicgate.usage_operation_org_hour WHERE org_id = 'o' AND start = $1 AND op_hash = 'h'`, h).Scan(&typ, &name, &buckets, &keys); err != nil {
		t.Fatal(err)
	}
	if typ != "query" || name != "Q" || len(buckets) != LatencyBuckets || keys != 2 {
		t.Fatalf("filled %s %s %v, %d keys", typ, name, buckets, keys)
	}
}
