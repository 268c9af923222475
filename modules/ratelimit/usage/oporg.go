package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OrganizationOperation is one operation of an organization over the hours
// selected, its keys added up: what the console's Operations page lists
// (docs/design.md D77, D83).
type OrganizationOperation struct {
	Hash     string        `json:"hash"`
	Type     string        `json:"type"`
	Name     string        `json:"name"`
	Requests int64         `json:"requests"`
	Errors   int64         `json:"errors"`
	Cost     int64         `json:"cost"`
	Keys     int64         `json:"keys"` // distinct keys that ran it in the hours selected
	P50      time.Duration `json:"-"`
	P95      time.Duration `json:"-"`
	Latency  Latencies     `json:"-"`
	LastSeen time.Time     `json:"last_seen"`
}

// orgOperationsSQL sums the organization's hours (usage_operation_org_hour,
// one row per operation and hour whatever the number of keys) and counts
// the keys per operation; %s is the key count's source (orgKeysRecent or
// orgKeysHours). The type and name are the greatest recorded: a row an
// older gateway added without them holds "".
const orgOperationsSQL = `WITH ops AS (
		SELECT h.op_hash, max(h.op_type) AS op_type, max(h.op_name) AS op_name, sum(h.requests)::bigint AS requests,
			sum(h.errors)::bigint AS errors, sum(h.cost)::bigint AS cost, %s AS buckets, max(h.last_seen) AS last_seen
		FROM civicgate.usage_operation_org_hour h
		WHERE h.org_id = $1 AND h.start >= $2 AND h.start <= $3
		GROUP BY h.op_hash),
	keys AS (%s)
	SELECT o.op_hash, o.op_type, o.op_name, o.requests, o.errors, o.cost, coalesce(k.keys, 0), o.buckets, o.last_seen
	FROM ops o LEFT JOIN keys k ON k.op_hash = o.op_hash
	ORDER BY o.requests DESC, o.op_hash`

// orgKeysRecent counts the keys whose last hour of the operation is in the
// window: exact when no key ran anything of the organization after the
// window's end, which OrganizationOperations checks first.
const orgKeysRecent = `SELECT op_hash, count(*) AS keys FROM civicgate.usage_operation_keys
		WHERE org_id = $1 AND last_start >= $2 GROUP BY op_hash`

// orgKeysHours counts them from the keys' hours: a window that ends in the
// past.
const orgKeysHours = `SELECT op_hash, count(DISTINCT key_id) AS keys FROM civicgate.usage_operation_hour
		WHERE org_id = $1 AND start >= $2 AND start <= $3 GROUP BY op_hash`

var (
	orgOperationsRecentSQL = fmt.Sprintf(orgOperationsSQL, bucketSums, orgKeysRecent)
	orgOperationsHoursSQL  = fmt.Sprintf(orgOperationsSQL, bucketSums, orgKeysHours)
)

// OrganizationOperations returns what the organization's keys ran in the
// hours selected, per operation (a.KeyID is ignored: Operations answers per
// key), most requests first: requests, errors and cost summed over the keys,
// the distinct keys, the latency buckets summed (P50 and P95 read from them,
// as Operations reads a key's) and the last time seen. It reads the
// organization's sums per hour, not every key's rows (docs/design.md D83).
func OrganizationOperations(ctx context.Context, pool *pgxpool.Pool, a OperationsArgs) ([]OrganizationOperation, error) {
	orgID, from, to, err := a.resolve(ctx, pool)
	if err != nil {
		return nil, err
	}
	// Each pair's last hour says whether the key ran the operation since
	// from only if nothing later than to was recorded: otherwise count the
	// window's own hours.
	var later bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM civicgate.usage_operation_keys WHERE org_id = $1 AND last_start > $2)`,
		orgID, to).Scan(&later); err != nil {
		return nil, fmt.Errorf("usage: organization operations: %w", schemaErr(err))
	}
	query := orgOperationsRecentSQL
	if later {
		query = orgOperationsHoursSQL
	}
	rows, err := pool.Query(ctx, query, pgx.QueryExecModeExec, orgID, from, to)
	if err != nil {
		return nil, fmt.Errorf("usage: organization operations: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OrganizationOperation, error) {
		var o OrganizationOperation
		var buckets []int64
		if err := row.Scan(&o.Hash, &o.Type, &o.Name, &o.Requests, &o.Errors, &o.Cost, &o.Keys, &buckets, &o.LastSeen); err != nil {
			return o, err
		}
		copy(o.Latency[:], buckets)
		o.P50, o.P95, o.LastSeen = o.Latency.Percentile(0.50), o.Latency.Percentile(0.95), o.LastSeen.UTC()
		return o, nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage: organization operations: %w", schemaErr(err))
	}
	return out, nil
}
