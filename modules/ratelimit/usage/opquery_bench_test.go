package usage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// seedOrganizationScale makes the organization at scale of BenchmarkFieldsOf
// and BenchmarkOrganizationOperations in a database of its own: 1 000 keys
// of the organization, each running 2 of 200 operations every hour for 30
// days (1.44 million operation hours), each operation reading 10 of 300
// coordinates, beside another organization's 100 keys; the organization's
// sums and its keys' last hours as flushes write them (docs/design.md D78,
// D83). It returns the pool and the 30 days of org_big.
func seedOrganizationScale(b *testing.B) (*pgxpool.Pool, OperationsArgs) {
	b.Helper()
	if testing.Short() {
		b.Skip("seeds 1.5 million rows")
	}
	dsn := testenv.Postgres(b)
	pool := newPool(b, dsn)
	ctx := context.Background()
	if err := keystore.Migrate(ctx, pool); err != nil { // the organizations the answers look up
		b.Fatal(err)
	}
	if err := Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	seed := []string{
		`INSERT INTO civicgate.operations (op_hash, op_type, op_name, normalized, first_seen, last_seen)
		 SELECT 'op' || o, 'query', 'Op' || o, '{ f }', $1::timestamptz, $1::timestamptz FROM generate_series(0, 199) AS o`,
		`INSERT INTO civicgate.operation_coordinates (op_hash, coordinate)
		 SELECT 'op' || o, 'Type' || ((o * 7 + c) % 30) || '.field' || c FROM generate_series(0, 199) AS o, generate_series(0, 9) AS c
		 ON CONFLICT DO NOTHING`,
		`INSERT INTO civicgate.usage_operation_hour (key_id, org_id, start, op_hash, op_type, op_name, requests, errors, cost,
			latency_buckets, last_seen)
		 SELECT 'key_' || k, CASE WHEN k < 1000 THEN 'org_big' ELSE 'org_other' END, $1::timestamptz - h * interval '1 hour',
			'op' || ((k + j * 37 + h / 24) % 200), 'query', 'Op', 10, 1, 20, '{0,1,2,3,4,0,0,0,0,0,0,0,0,0,0,0}', $1::timestamptz - h * interval '1 hour'
		 FROM generate_series(0, 1099) AS k, generate_series(0, 719) AS h, generate_series(0, 1) AS j
		 ON CONFLICT DO NOTHING`,
		// what every flush adds to the organization's sums and its keys'
		// last hours (docs/design.md D78, D83)
		`INSERT INTO civicgate.usage_operation_org_hour (org_id, start, op_hash, op_type, op_name, requests, errors, cost,
			latency_buckets, last_seen)
		 SELECT org_id, start, op_hash, min(op_type), min(op_name), sum(requests), sum(errors), sum(cost), ` + bucketSums + `, max(last_seen)
		 FROM civicgate.usage_operation_hour h GROUP BY org_id, start, op_hash`,
		`INSERT INTO civicgate.usage_operation_keys (org_id, op_hash, key_id, last_start)
		 SELECT org_id, op_hash, key_id, max(start) FROM civicgate.usage_operation_hour GROUP BY org_id, op_hash, key_id`,
		`VACUUM ANALYZE civicgate.usage_operation_hour`,
		`VACUUM ANALYZE civicgate.usage_operation_org_hour`,
		`VACUUM ANALYZE civicgate.usage_operation_keys`,
		`ANALYZE civicgate.operation_coordinates`,
	}
	for _, q := range seed {
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{now}
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	var rows int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM civicgate.usage_operation_hour WHERE org_id = 'org_big'`).Scan(&rows); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rows), "rows")
	return pool, OperationsArgs{Org: "org_big", Since: 30 * 24 * time.Hour, Now: now}
}

// BenchmarkFieldsOf is the field-usage query of one organization over 30
// days at scale (seedOrganizationScale). Target ≤ 200 ms per query
// (docs/design.md D70).
func BenchmarkFieldsOf(b *testing.B) {
	pool, args := seedOrganizationScale(b)
	ctx, now := context.Background(), args.Now
	// FieldsOf reads the organization's sums per hour (docs/design.md D78);
	// keys_rows is the same question over every key's rows, as before
	// them, measured in the same run for the ratio.
	b.Run("org_sums", func(b *testing.B) {
		for b.Loop() {
			fields, err := FieldsOf(ctx, pool, args)
			if err != nil || len(fields) == 0 {
				b.Fatal(len(fields), err)
			}
		}
	})
	b.Run("keys_rows", func(b *testing.B) {
		q := fmt.Sprintf(fieldsSQL, "civicgate.usage_operation_hour", "")
		for b.Loop() {
			rows, err := pool.Query(ctx, q, pgx.QueryExecModeExec, "org_big", now.Add(-30*24*time.Hour), now)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if rows.Close(); rows.Err() != nil || n == 0 {
				b.Fatal(n, rows.Err())
			}
		}
	})
}

// BenchmarkOrganizationOperations is the Operations page's question — the
// organization's operations over 30 days, its keys added up — at scale
// (seedOrganizationScale): org_sums is OrganizationOperations (the
// organization's sums and its keys' last hours, docs/design.md D83);
// keys_rows is Operations, every key's rows summed per key, then added up
// per operation as the page adds them: the way before, in the same run.
func BenchmarkOrganizationOperations(b *testing.B) {
	pool, args := seedOrganizationScale(b)
	ctx := context.Background()
	b.Run("org_sums", func(b *testing.B) {
		for b.Loop() {
			ops, err := OrganizationOperations(ctx, pool, args)
			if err != nil || len(ops) != 200 || ops[0].Keys == 0 {
				b.Fatal(len(ops), err)
			}
		}
	})
	b.Run("keys_rows", func(b *testing.B) {
		for b.Loop() {
			perKey, err := Operations(ctx, pool, args)
			if err != nil {
				b.Fatal(err)
			}
			byHash := map[string]*OrganizationOperation{}
			for _, r := range perKey {
				o := byHash[r.Hash]
				if o == nil {
					o = &OrganizationOperation{Hash: r.Hash}
					byHash[r.Hash] = o
				}
				o.Requests, o.Keys = o.Requests+r.Requests, o.Keys+1
				o.Latency.Plus(&r.Latency)
			}
			if len(byHash) != 200 {
				b.Fatal(len(byHash))
			}
		}
	})
}
