package usage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// BenchmarkFieldsOf is the field-usage query of one organization over 30
// days at scale, in a database of its own: 1 000 keys of the organization,
// each running 2 of 200 operations every hour for 30 days (1.44 million
// operation hours), each operation reading 10 of 300 coordinates, beside
// another organization's 100 keys. Target ≤ 200 ms per query
// (docs/design.md D70).
func BenchmarkFieldsOf(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 1.5 million rows")
	}
	dsn := testenv.Postgres(b)
	pool := newPool(b, dsn)
	ctx := context.Background()
	if err := keystore.Migrate(ctx, pool); err != nil { // the organizations FieldsOf looks up
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
		// what every flush adds to the organization's sums (docs/design.md D78)
		`INSERT INTO civicgate.usage_operation_org_hour (org_id, start, op_hash, requests, errors, cost, last_seen)
		 SELECT org_id, start, op_hash, sum(requests), sum(errors), sum(cost), max(last_seen)
		 FROM civicgate.usage_operation_hour GROUP BY org_id, start, op_hash`,
		`VACUUM ANALYZE civicgate.usage_operation_hour`,
		`VACUUM ANALYZE civicgate.usage_operation_org_hour`,
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
	args := OperationsArgs{Org: "org_big", Since: 30 * 24 * time.Hour, Now: now}
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
