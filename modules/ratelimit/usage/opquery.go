package usage

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The answers over the operation tables (docs/design.md D70): which keys ran
// which operations, which schema coordinates those operations read, who
// reads a coordinate, and which coordinates nobody read. Hours are selected
// as Query selects them: from the hour Now − Since falls in, up to Now.

// OperationsArgs selects operation hours of one organization.
type OperationsArgs struct {
	Org   string        // organization name or id (required)
	KeyID string        // only this key ("" = every key of the organization)
	Since time.Duration // how far back from Now (> 0)
	Now   time.Time     // zero: time.Now()
}

// window is the hours [from, to] selected by since and now.
func window(since time.Duration, now time.Time) (from, to time.Time, err error) {
	if since <= 0 {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: since must be positive, got %s", ErrBadQuery, since)
	}
	if now.IsZero() {
		now = time.Now()
	}
	return now.Add(-since).UTC().Truncate(time.Hour), now, nil
}

// resolve checks a and returns its organization id and hours.
func (a OperationsArgs) resolve(ctx context.Context, pool *pgxpool.Pool) (orgID string, from, to time.Time, err error) {
	if from, to, err = window(a.Since, a.Now); err != nil {
		return "", from, to, err
	}
	if a.Org == "" {
		return "", from, to, fmt.Errorf("%w: organization is empty", ErrBadQuery)
	}
	orgID, err = resolveOrg(ctx, pool, a.Org)
	return orgID, from, to, err
}

// OperationUsage is one key's use of one operation over the hours selected.
type OperationUsage struct {
	KeyID    string        `json:"key_id"`
	Hash     string        `json:"hash"`
	Type     string        `json:"type"`
	Name     string        `json:"name"`
	Requests int64         `json:"requests"`
	Errors   int64         `json:"errors"`
	Cost     int64         `json:"cost"`
	P50      time.Duration `json:"-"`
	P95      time.Duration `json:"-"`
	// Latency is the summed latency buckets, for adding operations of
	// several keys before reading a percentile (the console's operations
	// page).
	Latency  Latencies `json:"-"`
	LastSeen time.Time `json:"last_seen"`
}

// bucketSums is the element-wise sum of latency_buckets, as a bigint[].
var bucketSums = func() string {
	var b strings.Builder
	b.WriteString("ARRAY[")
	for i := range LatencyBuckets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("sum(h.latency_buckets[" + strconv.Itoa(i+1) + "])::bigint")
	}
	b.WriteString("]")
	return b.String()
}()

// Operations returns, per key and operation, what the organization's keys
// (or one key) ran in the hours selected, most requests first. P50 and P95
// are read from the latency buckets: each is the upper bound of its bucket,
// at most twice the true value (Latencies.Percentile).
func Operations(ctx context.Context, pool *pgxpool.Pool, a OperationsArgs) ([]OperationUsage, error) {
	orgID, from, to, err := a.resolve(ctx, pool)
	if err != nil {
		return nil, err
	}
	// planned with the values each time, as FieldsOf
	rows, err := pool.Query(ctx, `SELECT h.key_id, h.op_hash, min(h.op_type), min(h.op_name), sum(h.requests)::bigint,
		sum(h.errors)::bigint, sum(h.cost)::bigint, `+bucketSums+`, max(h.last_seen)
		FROM civicgate.usage_operation_hour h
		WHERE h.org_id = $1 AND ($2 = '' OR h.key_id = $2) AND h.start >= $3 AND h.start <= $4
		GROUP BY h.key_id, h.op_hash
		ORDER BY 5 DESC, h.key_id, h.op_hash`, pgx.QueryExecModeExec, orgID, a.KeyID, from, to)
	if err != nil {
		return nil, fmt.Errorf("usage: operations: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OperationUsage, error) {
		var u OperationUsage
		var buckets []int64
		if err := row.Scan(&u.KeyID, &u.Hash, &u.Type, &u.Name, &u.Requests, &u.Errors, &u.Cost, &buckets, &u.LastSeen); err != nil {
			return u, err
		}
		copy(u.Latency[:], buckets)
		u.P50, u.P95, u.LastSeen = u.Latency.Percentile(0.50), u.Latency.Percentile(0.95), u.LastSeen.UTC()
		return u, nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage: operations: %w", schemaErr(err))
	}
	return out, nil
}

// FieldUsage is one schema coordinate the selected operations read.
type FieldUsage struct {
	Coordinate string    `json:"coordinate"`
	Requests   int64     `json:"requests"`   // requests of operations that read it
	Operations int64     `json:"operations"` // distinct operations that read it
	LastSeen   time.Time `json:"last_seen"`
}

// fieldsSQL sums the selected hours per operation first (a few hundred
// rows however many keys ran them), then joins each operation's
// coordinates: BenchmarkFieldsOf. %s is the hours read: one key's from
// usage_operation_hour, a whole organization's from its sums per hour,
// usage_operation_org_hour (docs/design.md D78), a row per operation and
// hour instead of one per key.
const fieldsSQL = `WITH used AS (
		SELECT h.op_hash, sum(h.requests) AS requests, max(h.last_seen) AS last_seen
		FROM %s h
		WHERE h.org_id = $1 AND h.start >= $2 AND h.start <= $3 %s
		GROUP BY h.op_hash)
	SELECT c.coordinate, sum(u.requests)::bigint, count(*), max(u.last_seen)
	FROM used u JOIN civicgate.operation_coordinates c ON c.op_hash = u.op_hash
	GROUP BY c.coordinate
	ORDER BY 2 DESC, c.coordinate`

var (
	fieldsOfOrgSQL = fmt.Sprintf(fieldsSQL, "civicgate.usage_operation_org_hour", "")
	fieldsOfKeySQL = fmt.Sprintf(fieldsSQL, "civicgate.usage_operation_hour", "AND h.key_id = $4")
)

// FieldsOf returns the coordinates that the organization's operations (or
// one key's) read in the hours selected, with the requests of those
// operations and how many operations they were (CoordinateUsers names the
// keys): a join of the operation hours with each operation's
// coordinates, not a count per request. Operations recorded without a shape
// (and OtherOperation) read no coordinate here.
func FieldsOf(ctx context.Context, pool *pgxpool.Pool, a OperationsArgs) ([]FieldUsage, error) {
	orgID, from, to, err := a.resolve(ctx, pool)
	if err != nil {
		return nil, err
	}
	query, args := fieldsOfOrgSQL, []any{orgID, from, to}
	if a.KeyID != "" {
		query, args = fieldsOfKeySQL, append(args, a.KeyID)
	}
	rows, err := pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("usage: fields: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FieldUsage, error) {
		var f FieldUsage
		err := row.Scan(&f.Coordinate, &f.Requests, &f.Operations, &f.LastSeen)
		f.LastSeen = f.LastSeen.UTC()
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage: fields: %w", schemaErr(err))
	}
	return out, nil
}

// CoordinateUser is one key whose operations read a coordinate.
type CoordinateUser struct {
	OrgID    string    `json:"org_id"`
	KeyID    string    `json:"key_id"`
	Requests int64     `json:"requests"`
	LastSeen time.Time `json:"last_seen"`
}

// CoordinateUsers returns, per organization and key, the requests of
// operations that read coordinate ("Type.field", as
// contract.OperationShape spells them) in the hours selected, most first.
// It spans every organization: an operator's answer, not an
// organization's.
func CoordinateUsers(ctx context.Context, pool *pgxpool.Pool, coordinate string, since time.Duration, now time.Time) ([]CoordinateUser, error) {
	from, to, err := window(since, now)
	if err != nil {
		return nil, err
	}
	if coordinate == "" {
		return nil, fmt.Errorf("%w: coordinate is empty", ErrBadQuery)
	}
	rows, err := pool.Query(ctx, `SELECT h.org_id, h.key_id, sum(h.requests)::bigint, max(h.last_seen)
		FROM civicgate.operation_coordinates c
		JOIN civicgate.usage_operation_hour h ON h.op_hash = c.op_hash
		WHERE c.coordinate = $1 AND h.start >= $2 AND h.start <= $3
		GROUP BY h.org_id, h.key_id
		ORDER BY 3 DESC, h.org_id, h.key_id`, coordinate, from, to)
	if err != nil {
		return nil, fmt.Errorf("usage: coordinate users: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CoordinateUser, error) {
		var u CoordinateUser
		err := row.Scan(&u.OrgID, &u.KeyID, &u.Requests, &u.LastSeen)
		u.LastSeen = u.LastSeen.UTC()
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage: coordinate users: %w", schemaErr(err))
	}
	return out, nil
}

// Unused returns the coordinates of schemaCoordinates that no recorded
// operation read in the hours selected, sorted. Only operations recorded
// with a shape count: before the guard computes shapes every coordinate
// is unused.
func Unused(ctx context.Context, pool *pgxpool.Pool, schemaCoordinates []string, since time.Duration, now time.Time) ([]string, error) {
	from, to, err := window(since, now)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT s.coordinate FROM unnest($1::text[]) AS s(coordinate)
		WHERE NOT EXISTS (SELECT 1 FROM civicgate.operation_coordinates c
			JOIN civicgate.usage_operation_org_hour h ON h.op_hash = c.op_hash
			WHERE c.coordinate = s.coordinate AND h.start >= $2 AND h.start <= $3)`, schemaCoordinates, from, to)
	if err != nil {
		return nil, fmt.Errorf("usage: unused: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("usage: unused: %w", schemaErr(err))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// RecordedOperation is one operation the gateways counted, with its text
// and the keys that ran it: what `civicgate schema check` checks a
// candidate schema against.
type RecordedOperation struct {
	Hash       string         `json:"hash"`
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Normalized string         `json:"normalized"` // "" when recorded without a shape
	Keys       []OperationKey `json:"keys"`
}

// OperationKey is one key that ran a RecordedOperation.
type OperationKey struct {
	OrgID    string    `json:"org_id"`
	KeyID    string    `json:"key_id"`
	Requests int64     `json:"requests"`
	LastSeen time.Time `json:"last_seen"`
}

// RecordedOperations returns every operation counted in an hour starting at
// or after since truncated to its hour, of every organization, sorted by
// hash, each with its keys sorted by organization and key. OtherOperation
// (a flood's remainder, no document) is left out.
func RecordedOperations(ctx context.Context, pool *pgxpool.Pool, since time.Time) ([]RecordedOperation, error) {
	rows, err := pool.Query(ctx, `SELECT h.op_hash, min(h.op_type), min(h.op_name), coalesce(min(o.normalized), ''),
			h.org_id, h.key_id, sum(h.requests)::bigint, max(h.last_seen)
		FROM civicgate.usage_operation_hour h
		LEFT JOIN civicgate.operations o ON o.op_hash = h.op_hash
		WHERE h.start >= $1 AND h.op_hash <> $2
		GROUP BY h.op_hash, h.org_id, h.key_id
		ORDER BY h.op_hash, h.org_id, h.key_id`, since.UTC().Truncate(time.Hour), OtherOperation)
	if err != nil {
		return nil, fmt.Errorf("usage: recorded operations: %w", schemaErr(err))
	}
	defer rows.Close()
	var out []RecordedOperation
	for rows.Next() {
		var op RecordedOperation
		var k OperationKey
		if err := rows.Scan(&op.Hash, &op.Type, &op.Name, &op.Normalized, &k.OrgID, &k.KeyID, &k.Requests, &k.LastSeen); err != nil {
			return nil, fmt.Errorf("usage: recorded operations: %w", err)
		}
		k.LastSeen = k.LastSeen.UTC()
		if n := len(out); n > 0 && out[n-1].Hash == op.Hash {
			out[n-1].Keys = append(out[n-1].Keys, k)
			continue
		}
		op.Keys = []OperationKey{k}
		out = append(out, op)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: recorded operations: %w", schemaErr(err))
	}
	return out, nil
}
