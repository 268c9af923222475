package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// HoursAfterArgs selects hour rows in the metering export's order (start,
// then key id), for a reader that pages through them (docs/design.md D73).
type HoursAfterArgs struct {
	AfterStart time.Time // rows after (AfterStart, AfterKey) in (start, key_id) order
	AfterKey   string    // "" with AfterStart: every key of AfterStart's hour too
	Before     time.Time // only hours that start before this
	OrgID      string    // "" = every organization
	Limit      int       // at most this many rows (> 0)
}

// HoursAfter returns the hour rows after the position (AfterStart, AfterKey)
// and starting before Before, ordered by start then key id, at most Limit.
// A zero AfterStart with an empty AfterKey reads from the first row; the
// empty AfterKey sorts before every key id, so (hour, "") is "from hour on".
func HoursAfter(ctx context.Context, pool *pgxpool.Pool, a HoursAfterArgs) ([]Row, error) {
	if a.Limit <= 0 {
		return nil, fmt.Errorf("%w: limit must be positive, got %d", ErrBadQuery, a.Limit)
	}
	rows, err := pool.Query(ctx, `SELECT key_id, org_id, start, admitted, refused, client_errors, server_errors, cost, mcp_calls
		FROM `+hourTable+` WHERE (start, key_id) > ($1, $2) AND start < $3 AND ($4 = '' OR org_id = $4)
		ORDER BY start, key_id LIMIT $5`, a.AfterStart.UTC(), a.AfterKey, a.Before.UTC(), a.OrgID, a.Limit)
	if err != nil {
		return nil, fmt.Errorf("usage: hours after: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Row, error) {
		var r Row
		err := row.Scan(&r.KeyID, &r.OrgID, &r.Start, &r.Admitted, &r.Refused, &r.ClientErrors, &r.ServerErrors, &r.Cost, &r.MCP)
		r.Start = r.Start.UTC()
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage: hours after: %w", schemaErr(err))
	}
	return out, nil
}

// OrgID is the id of the organization named or identified by org, as Query
// resolves it (ErrUnknownOrg when neither the organizations nor the usage
// rows know it).
func OrgID(ctx context.Context, pool *pgxpool.Pool, org string) (string, error) {
	if org == "" {
		return "", fmt.Errorf("%w: organization is empty", ErrBadQuery)
	}
	return resolveOrg(ctx, pool, org)
}

// KeyHour names one key's hour (its start, UTC).
type KeyHour struct {
	KeyID string
	Start time.Time
}

// OperationHour is one operation's counts in a key's hour
// (civicgate.usage_operation_hour, docs/design.md D70).
type OperationHour struct {
	KeyHour
	Hash, Type, Name       string
	Requests, Errors, Cost int64
}

// OperationHoursOf returns the operation rows of the given key hours,
// ordered by key hour (as given: start, then key) and hash: what the
// metering export adds to each hour it sends (docs/design.md D73).
func OperationHoursOf(ctx context.Context, pool *pgxpool.Pool, hours []KeyHour) ([]OperationHour, error) {
	if len(hours) == 0 {
		return nil, nil
	}
	keys, starts := make([]string, len(hours)), make([]time.Time, len(hours))
	for i, h := range hours {
		keys[i], starts[i] = h.KeyID, h.Start.UTC()
	}
	rows, err := pool.Query(ctx, `SELECT h.key_id, h.start, h.op_hash, h.op_type, h.op_name, h.requests, h.errors, h.cost
		FROM unnest($1::text[], $2::timestamptz[]) AS p(key_id, start)
		JOIN civicgate.usage_operation_hour h ON h.key_id = p.key_id AND h.start = p.start
		ORDER BY h.start, h.key_id, h.op_hash`, keys, starts)
	if err != nil {
		return nil, fmt.Errorf("usage: operation hours: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OperationHour, error) {
		var o OperationHour
		err := row.Scan(&o.KeyID, &o.Start, &o.Hash, &o.Type, &o.Name, &o.Requests, &o.Errors, &o.Cost)
		o.Start = o.Start.UTC()
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage: operation hours: %w", schemaErr(err))
	}
	return out, nil
}
