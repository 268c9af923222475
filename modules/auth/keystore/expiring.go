package keystore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ExpiringKey is a live key whose expiry comes soon, as the expiry notice
// mail names it (docs/design.md D82): never the key or its hash.
type ExpiringKey struct {
	ID, OrgID, Org, Prefix, Name string
	ExpiresAt                    time.Time
}

// ExpiringKeys returns at most limit active keys of active organizations
// whose expiry is in (now, now+within], the soonest first. A rotating key is
// left out: its replacement carries the same expiry (D71) and is listed. now
// is the caller's clock (List's is the package's).
func ExpiringKeys(ctx context.Context, pool *pgxpool.Pool, now time.Time, within time.Duration, limit int) ([]ExpiringKey, error) {
	rows, err := pool.Query(ctx, `SELECT k.id, k.org_id, o.name, k.key_prefix, k.name, k.expires_at
		FROM civicgate.api_keys k JOIN civicgate.organizations o ON o.id = k.org_id
		WHERE k.expires_at > $1 AND k.expires_at <= $2 AND o.status = 'active'
			AND k.status = 'active'
		ORDER BY k.expires_at, k.id LIMIT $3`, now.UTC(), now.Add(within).UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("keystore: expiring keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ExpiringKey, error) {
		var k ExpiringKey
		err := r.Scan(&k.ID, &k.OrgID, &k.Org, &k.Prefix, &k.Name, &k.ExpiresAt)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("keystore: expiring keys: %w", err)
	}
	return keys, nil
}
