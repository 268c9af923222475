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

// DeprecatedCoordinateUse is one deprecated schema coordinate that an
// organization's operations read in the hours selected (docs/design.md D77).
type DeprecatedCoordinateUse struct {
	Coordinate string `json:"coordinate"`
	// Reason is the schema's @deprecated reason as last recorded ("" when
	// the schema gave none): free text of the schema, never a caller's.
	Reason     string         `json:"reason"`
	Requests   int64          `json:"requests"` // requests of the operations that read it
	Keys       int64          `json:"keys"`     // distinct keys that ran those operations
	Operations []OperationRef `json:"operations"`
	LastSeen   time.Time      `json:"last_seen"`
}

// OperationRef names one operation: its document hash and the name first
// seen for it, with the requests it made in the hours selected.
type OperationRef struct {
	Hash     string `json:"hash"`
	Name     string `json:"name"`
	Requests int64  `json:"requests"`
}

// deprecatedUseSQL sums the selected hours per operation and key first, as
// fieldsSQL does, then joins the deprecated coordinates of each operation
// (the partial index operation_coordinates_deprecated).
const deprecatedUseSQL = `WITH used AS (
		SELECT h.op_hash, h.key_id, min(h.op_name) AS op_name, sum(h.requests) AS requests, max(h.last_seen) AS last_seen
		FROM civicgate.usage_operation_hour h
		WHERE h.org_id = $1 AND h.start >= $2 AND h.start <= $3
		GROUP BY h.op_hash, h.key_id)
	SELECT c.coordinate, c.deprecated_reason, u.op_hash, min(u.op_name), sum(u.requests)::bigint,
		array_agg(u.key_id ORDER BY u.key_id), max(u.last_seen)
	FROM used u JOIN civicgate.operation_coordinates c ON c.op_hash = u.op_hash AND c.deprecated_reason IS NOT NULL
	GROUP BY c.coordinate, c.deprecated_reason, u.op_hash
	ORDER BY c.coordinate, u.op_hash`

// DeprecatedUse returns the deprecated coordinates that organization org's
// keys (org is a name or an id, as OperationsArgs.Org) read in the hours
// selected (since and now as in OperationsArgs), each with its reason, the
// requests and distinct keys of the operations that read it and those
// operations, the most requests first. A coordinate is deprecated when the
// last recorded shape of an operation reading it said so: a schema reload
// reaches an operation's rows with its next record (docs/design.md D77).
// Operations recorded without a shape read nothing here.
func DeprecatedUse(ctx context.Context, pool *pgxpool.Pool, org string, since time.Duration, now time.Time) ([]DeprecatedCoordinateUse, error) {
	orgID, from, to, err := OperationsArgs{Org: org, Since: since, Now: now}.resolve(ctx, pool)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, deprecatedUseSQL, pgx.QueryExecModeExec, orgID, from, to)
	if err != nil {
		return nil, fmt.Errorf("usage: deprecated use: %w", schemaErr(err))
	}
	defer rows.Close()
	var out []DeprecatedCoordinateUse
	keys := map[string]bool{} // of out's last coordinate
	for rows.Next() {
		var coord, reason string
		var op OperationRef
		var opKeys []string
		var lastSeen time.Time
		if err := rows.Scan(&coord, &reason, &op.Hash, &op.Name, &op.Requests, &opKeys, &lastSeen); err != nil {
			return nil, fmt.Errorf("usage: deprecated use: %w", err)
		}
		// One coordinate's rows are adjacent. Operations reading it may
		// have recorded different reasons (gateways on different schemas
		// during a reload): the reason shown is that of the operation seen
		// last.
		if n := len(out); n == 0 || out[n-1].Coordinate != coord {
			out = append(out, DeprecatedCoordinateUse{Coordinate: coord})
			clear(keys)
		}
		d := &out[len(out)-1]
		d.Requests += op.Requests
		d.Operations = append(d.Operations, op)
		for _, k := range opKeys {
			if !keys[k] {
				keys[k] = true
				d.Keys++
			}
		}
		if len(d.Operations) == 1 || lastSeen.After(d.LastSeen) {
			d.LastSeen, d.Reason = lastSeen.UTC(), reason
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: deprecated use: %w", schemaErr(err))
	}
	for i := range out {
		slices.SortFunc(out[i].Operations, func(a, b OperationRef) int {
			return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hash, b.Hash))
		})
	}
	slices.SortStableFunc(out, func(a, b DeprecatedCoordinateUse) int { return cmp.Compare(b.Requests, a.Requests) })
	return out, nil
}
