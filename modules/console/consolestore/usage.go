package consolestore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// UsageQuery selects an organization's usage (or one key's) in [From, To),
// summed per Step: time.Hour (from the hourly table) or 24h (UTC days).
type UsageQuery struct {
	OrgID string
	KeyID string // "" = every key of the organization, summed
	From  time.Time
	To    time.Time
	Step  time.Duration
}

// UsageSeries returns one row per bucket that has usage (KeyID as asked),
// oldest first; the chart fills the gaps.
func UsageSeries(ctx context.Context, pool *pgxpool.Pool, q UsageQuery) ([]usage.Row, error) {
	trunc := "hour"
	if q.Step >= 24*time.Hour {
		trunc = "day"
	}
	rows, err := pool.Query(ctx, `SELECT date_trunc('`+trunc+`', start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS b,
			sum(admitted), sum(refused), sum(client_errors), sum(server_errors), sum(cost)
		FROM civicgate.usage_hour
		WHERE org_id = $1 AND ($2 = '' OR key_id = $2) AND start >= $3 AND start < $4
		GROUP BY b ORDER BY b`, q.OrgID, q.KeyID, q.From, q.To)
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (usage.Row, error) {
		u := usage.Row{KeyID: q.KeyID, OrgID: q.OrgID}
		err := r.Scan(&u.Start, &u.Admitted, &u.Refused, &u.ClientErrors, &u.ServerErrors, &u.Cost)
		u.Start = u.Start.UTC()
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage: %w", err)
	}
	return out, nil
}

// UsageRows returns the organization's hourly rows per key in [from, to),
// for the CSV download, oldest first.
func UsageRows(ctx context.Context, pool *pgxpool.Pool, orgID, keyID string, from, to time.Time) ([]usage.Row, error) {
	rows, err := pool.Query(ctx, `SELECT key_id, start, admitted, refused, client_errors, server_errors, cost
		FROM civicgate.usage_hour WHERE org_id = $1 AND ($2 = '' OR key_id = $2) AND start >= $3 AND start < $4
		ORDER BY start, key_id`, orgID, keyID, from, to)
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage rows: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (usage.Row, error) {
		u := usage.Row{OrgID: orgID}
		err := r.Scan(&u.KeyID, &u.Start, &u.Admitted, &u.Refused, &u.ClientErrors, &u.ServerErrors, &u.Cost)
		u.Start = u.Start.UTC()
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage rows: %w", err)
	}
	return out, nil
}

// WindowUse is how many requests a key was admitted in the trailing window
// of a rate (the counts the gateways flush every few seconds; the limiter's
// own state in Redis is authoritative).
type WindowUse struct {
	KeyID    string
	Window   time.Duration
	Admitted int64
}

// RecentUse returns, for each key and window, the admitted requests in the
// trailing window, from the minute table for windows up to 48 h and the
// hourly one beyond.
func RecentUse(ctx context.Context, pool *pgxpool.Pool, keyIDs []string, windows []time.Duration) ([]WindowUse, error) {
	var out []WindowUse
	for _, w := range windows {
		table := "usage_minute"
		if w > usage.MinuteRetention {
			table = "usage_hour"
		}
		rows, err := pool.Query(ctx, `SELECT key_id, sum(admitted) FROM civicgate.`+table+`
			WHERE key_id = ANY($1) AND start > now() - $2::interval GROUP BY key_id`, keyIDs, w.String())
		if err != nil {
			return nil, fmt.Errorf("consolestore: recent usage: %w", err)
		}
		for rows.Next() {
			u := WindowUse{Window: w}
			if err := rows.Scan(&u.KeyID, &u.Admitted); err != nil {
				rows.Close()
				return nil, fmt.Errorf("consolestore: recent usage: %w", err)
			}
			out = append(out, u)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("consolestore: recent usage: %w", err)
		}
	}
	return out, nil
}
