package usage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DeprecatedUser is one organization's use of one deprecated schema
// coordinate since a time: what a deprecation notice tells it
// (docs/design.md D79).
type DeprecatedUser struct {
	Org        string
	Coordinate string
	// Reason is the schema's @deprecated reason recorded with the operation
	// seen last among those reading it ("" when the schema gave none).
	Reason   string
	Requests int64 // requests of the operations that read it
	// Operations read it, the most requests first (every one: a caller
	// that shows them bounds the list).
	Operations []OperationRef
	// FirstSeen is the start of the first hour since the time asked in
	// which one of the organization's operations reading it ran.
	FirstSeen time.Time
}

// deprecatedUsersSQL sums each organization's hours (usage_operation_org_hour,
// D78) per operation for the operations with a deprecated coordinate only
// (the partial index operation_coordinates_deprecated, then the hour table's
// (op_hash, start) index), then joins their deprecated coordinates.
const deprecatedUsersSQL = `WITH deprecated AS (
		SELECT DISTINCT op_hash FROM civicgate.operation_coordinates WHERE deprecated_reason IS NOT NULL),
	used AS (
		SELECT h.org_id, h.op_hash, sum(h.requests) AS requests, min(h.start) AS first_seen, max(h.last_seen) AS last_seen
		FROM civicgate.usage_operation_org_hour h JOIN deprecated d ON d.op_hash = h.op_hash
		WHERE h.start >= $1
		GROUP BY h.org_id, h.op_hash)
	SELECT u.org_id, c.coordinate, c.deprecated_reason, u.op_hash, coalesce(o.op_name, ''), u.requests::bigint,
		u.first_seen, u.last_seen
	FROM used u
	JOIN civicgate.operation_coordinates c ON c.op_hash = u.op_hash AND c.deprecated_reason IS NOT NULL
	LEFT JOIN civicgate.operations o ON o.op_hash = u.op_hash
	ORDER BY u.org_id, c.coordinate, u.op_hash`

// DeprecatedUsers returns, for every organization and deprecated coordinate
// its operations read in the hours starting at or after since (rounded down
// to its hour), the reason, the requests and the operations that read it
// and the first hour it was seen, ordered by organization then coordinate.
// A coordinate is deprecated as the last record of each operation says
// (D77); an organization that did not read it is not listed.
func DeprecatedUsers(ctx context.Context, pool *pgxpool.Pool, since time.Time) ([]DeprecatedUser, error) {
	rows, err := pool.Query(ctx, deprecatedUsersSQL, pgx.QueryExecModeExec, since.UTC().Truncate(time.Hour))
	if err != nil {
		return nil, fmt.Errorf("usage: deprecated users: %w", schemaErr(err))
	}
	defer rows.Close()
	var out []DeprecatedUser
	var lastSeen time.Time // of out's last pair's reason
	for rows.Next() {
		var org, coord, reason string
		var op OperationRef
		var first, last time.Time
		if err := rows.Scan(&org, &coord, &reason, &op.Hash, &op.Name, &op.Requests, &first, &last); err != nil {
			return nil, fmt.Errorf("usage: deprecated users: %w", err)
		}
		// One pair's rows are adjacent; the reason is that of the operation
		// seen last, as DeprecatedUse shows it.
		if n := len(out); n == 0 || out[n-1].Org != org || out[n-1].Coordinate != coord {
			out = append(out, DeprecatedUser{Org: org, Coordinate: coord, Reason: reason, FirstSeen: first.UTC()})
			lastSeen = last
		}
		d := &out[len(out)-1]
		d.Requests += op.Requests
		d.Operations = append(d.Operations, op)
		if first.Before(d.FirstSeen) {
			d.FirstSeen = first.UTC()
		}
		if last.After(lastSeen) {
			lastSeen, d.Reason = last, reason
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: deprecated users: %w", schemaErr(err))
	}
	for i := range out {
		slices.SortFunc(out[i].Operations, func(a, b OperationRef) int {
			return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hash, b.Hash))
		})
	}
	return out, nil
}
