package keystore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SetTier moves every live (active or rotating) key of the organization org
// to tier, in one transaction holding the organization's lock, and notifies
// the gateways so cached keys take the new tier's quotas and families at
// once. It returns how many keys changed. The caller checks that tier is
// configured (the key store knows tier names only).
func SetTier(ctx context.Context, pool *pgxpool.Pool, org, tier string) (int64, error) {
	if !ValidTier(tier) {
		return 0, fmt.Errorf("keystore: bad tier name %q", tier)
	}
	var n int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		id, err := lockOrg(ctx, tx, org, false)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE civicgate.api_keys SET tier = $2
			WHERE org_id = $1 AND status IN ('active','rotating') AND tier <> $2`, id, tier)
		if err != nil {
			return fmt.Errorf("keystore: set tier: %w", err)
		}
		n = tag.RowsAffected()
		return notify(ctx, tx, "org:"+id)
	})
	return n, err
}
