package usage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Granularities of QueryArgs.By.
const (
	ByMinute = "minute"
	ByHour   = "hour"
)

// autoMinuteUpTo is the longest Since for which By "" means minute rows.
const autoMinuteUpTo = 2 * time.Hour

// ErrUnknownOrg is returned (wrapped) by Query for an organization that is
// neither in civicgate.organizations nor in any usage row.
var ErrUnknownOrg = errors.New("usage: no such organization")

// ErrBadQuery is returned (wrapped) by Query for arguments it refuses.
var ErrBadQuery = errors.New("usage: bad query")

// QueryArgs selects usage rows.
type QueryArgs struct {
	Org   string        // organization name or id (required)
	KeyID string        // only this key ("" = every key of the organization)
	Since time.Duration // how far back from Now (> 0)
	Now   time.Time     // zero: time.Now()
	By    string        // ByMinute, ByHour, or "": minute when Since <= 2h, else hour
}

// Granularity is the table Query reads for q: ByMinute or ByHour. Minute rows
// are kept MinuteRetention, so ByMinute is refused for a longer Since.
func (q QueryArgs) Granularity() (string, error) {
	if q.Since <= 0 {
		return "", fmt.Errorf("%w: since must be positive, got %s", ErrBadQuery, q.Since)
	}
	switch q.By {
	case "":
		if q.Since <= autoMinuteUpTo {
			return ByMinute, nil
		}
		return ByHour, nil
	case ByMinute:
		if q.Since > MinuteRetention {
			return "", fmt.Errorf("%w: minute rows are kept %s; use hour granularity for a longer since (%s)", ErrBadQuery, MinuteRetention, q.Since)
		}
		return ByMinute, nil
	case ByHour:
		return ByHour, nil
	default:
		return "", fmt.Errorf("%w: granularity %q is not minute or hour", ErrBadQuery, q.By)
	}
}

// Query returns the organization's rows (or one key's) whose bucket starts
// at or after Now - Since truncated to the granularity (so the bucket Now -
// Since falls in is included) and not after Now, ordered by start then key.
// Org is looked up in civicgate.organizations by id, then by name; an
// organization unknown there but present in the usage rows (a gateway reading
// a keys file) is queried by that id.
func Query(ctx context.Context, pool *pgxpool.Pool, q QueryArgs) ([]Row, error) {
	by, err := q.Granularity()
	if err != nil {
		return nil, err
	}
	if q.Org == "" {
		return nil, fmt.Errorf("%w: organization is empty", ErrBadQuery)
	}
	now := q.Now
	if now.IsZero() {
		now = time.Now()
	}
	orgID, err := resolveOrg(ctx, pool, q.Org)
	if err != nil {
		return nil, err
	}
	table, unit := minuteTable, time.Minute
	if by == ByHour {
		table, unit = hourTable, time.Hour
	}
	from := now.Add(-q.Since).UTC().Truncate(unit)
	rows, err := pool.Query(ctx, `SELECT key_id, org_id, start, admitted, refused, client_errors, server_errors, cost, mcp_calls
		FROM `+table+` WHERE org_id = $1 AND ($2 = '' OR key_id = $2) AND start >= $3 AND start <= $4
		ORDER BY start, key_id`, orgID, q.KeyID, from, now)
	if err != nil {
		return nil, fmt.Errorf("usage: query: %w", schemaErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Row, error) {
		var r Row
		err := row.Scan(&r.KeyID, &r.OrgID, &r.Start, &r.Admitted, &r.Refused, &r.ClientErrors, &r.ServerErrors, &r.Cost, &r.MCP)
		r.Start = r.Start.UTC()
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage: query: %w", schemaErr(err))
	}
	return out, nil
}

// resolveOrg returns the id of the organization named or identified by org.
func resolveOrg(ctx context.Context, pool *pgxpool.Pool, org string) (string, error) {
	var id string
	err := pool.QueryRow(ctx, `SELECT id FROM civicgate.organizations WHERE id = $1 OR name = $1
		ORDER BY id = $1 DESC LIMIT 1`, org).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("usage: look up organization: %w", schemaErr(err))
	}
	var counted bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM civicgate.usage_hour WHERE org_id = $1)
		OR EXISTS (SELECT 1 FROM civicgate.usage_operation_hour WHERE org_id = $1)`, org).Scan(&counted); err != nil {
		return "", fmt.Errorf("usage: look up organization: %w", schemaErr(err))
	}
	if !counted {
		return "", fmt.Errorf("%w %q", ErrUnknownOrg, org)
	}
	return org, nil
}
