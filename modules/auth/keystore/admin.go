package keystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The administrative operations on PostgreSQL (`civicgate keys`). Each runs in
// one transaction holding the organization's row lock, and notifies the
// gateways (Channel) in it. file_admin.go applies the same rules to a keys
// file.

// DefaultOverlap is how long `keys rotate` keeps the rotated key accepted
// when no --overlap is given.
const DefaultOverlap = 24 * time.Hour

// Issued is a newly created key. Key is shown to the operator once and never stored.
type Issued struct {
	ID    string
	OrgID string
	Key   string
}

// RotateSpec says what Rotate does: a new key for Org in Env (of Tier, or
// the rotated key's tier when empty); the oldest active key stays accepted
// for Overlap (0: rotated out at once).
type RotateSpec struct {
	Org, Tier, Env string
	Overlap        time.Duration
}

// Rotation is what Rotate did.
type Rotation struct {
	Issued
	// RotatedOut are the keys no longer accepted from now on: a key still
	// rotating from an earlier rotation (its overlap ends early) and, with no
	// overlap, the oldest active key.
	RotatedOut []string
	// Rotating is the oldest active key, accepted until Until (overlap > 0).
	Rotating string
	Until    time.Time
}

// Revocation is what Revoke did: the key's effective status before.
type Revocation struct {
	KeyID string
	Was   string
}

// Deletion is what DeleteOrg did.
type Deletion struct {
	OrgID   string
	Revoked int // keys that were not revoked yet
	// Endpoints is how many webhook endpoints were removed (with their
	// deliveries); WebhookTables is false when the database has no
	// civicgate.webhook_endpoints table (webhooks never migrated).
	Endpoints     int64
	WebhookTables bool
}

func (s RotateSpec) check() error {
	if !ValidEnv(s.Env) {
		return fmt.Errorf("keystore: environment %q is not live or test", s.Env)
	}
	if s.Tier != "" && !ValidTier(s.Tier) {
		return fmt.Errorf("keystore: bad tier name %q", s.Tier)
	}
	if s.Overlap < 0 {
		return fmt.Errorf("keystore: negative overlap %s", s.Overlap)
	}
	return nil
}

// IssueSpec says what IssueWith creates: a key of Tier for the organization
// named Org in Env, with its Lifecycle (name, labels, expiry; docs/design.md
// D71).
type IssueSpec struct {
	Org, Tier, Env string
	Lifecycle
}

// Issue creates a key of tier for the organization org in env, creating the
// organization if needed, with no name, labels or expiry (IssueWith).
func Issue(ctx context.Context, pool *pgxpool.Pool, org, tier, env string) (Issued, error) {
	return IssueWith(ctx, pool, IssueSpec{Org: org, Tier: tier, Env: env})
}

// IssueWith creates the key spec describes, creating the organization if
// needed. It refuses a third live key (ErrTooManyKeys): active or rotating
// keys that have not expired count (an expired key is refused everywhere,
// so it holds no slot), and a Lifecycle that Check refuses.
func IssueWith(ctx context.Context, pool *pgxpool.Pool, spec IssueSpec) (Issued, error) {
	if err := checkArgs(spec.Org, spec.Tier, spec.Env); err != nil {
		return Issued{}, err
	}
	t := now()
	if err := spec.Lifecycle.Check(t); err != nil {
		return Issued{}, err
	}
	var out Issued
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		orgID, err := lockOrg(ctx, tx, spec.Org, true)
		if err != nil {
			return err
		}
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM civicgate.api_keys
			WHERE org_id = $1 AND env = $2 AND status IN ('active','rotating') AND (expires_at IS NULL OR expires_at > $3)`,
			orgID, spec.Env, t).Scan(&live); err != nil {
			return fmt.Errorf("keystore: count keys: %w", err)
		}
		if live >= MaxLiveKeys {
			return ErrTooManyKeys
		}
		out, err = insertKey(ctx, tx, orgID, spec.Tier, spec.Env, spec.Lifecycle)
		return err
	})
	return out, err
}

// Rotate issues a new key for spec.Org in spec.Env. A key still rotating from
// an earlier rotation is rotated out now; the oldest active key becomes
// rotating until now+Overlap (or, with no overlap, is rotated out now). With
// an overlap and two active keys it refuses (ErrNoOverlapSlot): the live keys
// never exceed MaxLiveKeys.
func Rotate(ctx context.Context, pool *pgxpool.Pool, spec RotateSpec) (Rotation, error) {
	if err := spec.check(); err != nil {
		return Rotation{}, err
	}
	var out Rotation
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		out = Rotation{}
		orgID, err := lockOrg(ctx, tx, spec.Org, false)
		if err != nil {
			return err
		}
		// Expired keys are not live: they are neither rotated nor counted.
		rows, err := tx.Query(ctx, `SELECT id, tier, key_hash, status, name, labels, expires_at FROM civicgate.api_keys
			WHERE org_id = $1 AND env = $2 AND status IN ('active','rotating') AND (expires_at IS NULL OR expires_at > $3)
			ORDER BY created_at, id`, orgID, spec.Env, now())
		if err != nil {
			return fmt.Errorf("keystore: live keys: %w", err)
		}
		type live struct {
			id, tier, status string
			hash             []byte
			life             Lifecycle
		}
		keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (live, error) {
			var k live
			var expires *time.Time
			err := r.Scan(&k.id, &k.tier, &k.hash, &k.status, &k.life.Name, &k.life.Labels, &expires)
			if expires != nil {
				k.life.ExpiresAt = *expires
			}
			return k, err
		})
		if err != nil {
			return fmt.Errorf("keystore: live keys: %w", err)
		}
		var active []live
		for _, k := range keys {
			if k.status == StatusActive {
				active = append(active, k)
			}
		}
		if len(active) == 0 {
			return ErrNothingToRotate
		}
		if spec.Overlap > 0 && len(active) >= MaxLiveKeys {
			return ErrNoOverlapSlot
		}
		retire := func(k live) error {
			if _, err := tx.Exec(ctx, `UPDATE civicgate.api_keys SET status = 'rotated', retired_at = now() WHERE id = $1`, k.id); err != nil {
				return fmt.Errorf("keystore: retire key: %w", err)
			}
			out.RotatedOut = append(out.RotatedOut, k.id)
			return notify(ctx, tx, "key:"+Hash(k.hash).String())
		}
		for _, k := range keys {
			if k.status == StatusRotating {
				if err := retire(k); err != nil {
					return err
				}
			}
		}
		old := active[0]
		if spec.Overlap == 0 {
			if err := retire(old); err != nil {
				return err
			}
		} else {
			if err := tx.QueryRow(ctx, `UPDATE civicgate.api_keys SET status = 'rotating', rotates_out_at = $2
				WHERE id = $1 RETURNING rotates_out_at`, old.id, now().Add(spec.Overlap)).Scan(&out.Until); err != nil {
				return fmt.Errorf("keystore: rotate key: %w", err)
			}
			out.Rotating = old.id
			if err := notify(ctx, tx, "key:"+Hash(old.hash).String()); err != nil {
				return err
			}
		}
		tier := spec.Tier
		if tier == "" {
			tier = old.tier
		}
		// The new key replaces the old one's secret, not its grant: it keeps
		// its name, labels and expiry (docs/design.md D71).
		out.Issued, err = insertKey(ctx, tx, orgID, tier, spec.Env, old.life)
		return err
	})
	return out, err
}

// Revoke marks a key revoked. A key already revoked is refused with an
// *AlreadyRevokedError (nothing changes); a rotating or rotated-out key is
// revoked (Was says which it was).
func Revoke(ctx context.Context, pool *pgxpool.Pool, keyID string) (Revocation, error) {
	var out Revocation
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var h []byte
		var status string
		var retired, until, expires *time.Time
		err := tx.QueryRow(ctx, `SELECT key_hash, status, retired_at, rotates_out_at, expires_at FROM civicgate.api_keys WHERE id = $1 FOR UPDATE`, keyID).
			Scan(&h, &status, &retired, &until, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoSuchKey
		}
		if err != nil {
			return fmt.Errorf("keystore: revoke: %w", err)
		}
		if status == StatusRevoked {
			return &AlreadyRevokedError{KeyID: keyID, At: retired}
		}
		t := now()
		out = Revocation{KeyID: keyID, Was: status}
		if status == StatusRotating && until != nil {
			out.Was = effectiveStatus(status, *until, t)
		}
		if expires != nil {
			out.Was = lifeStatus(out.Was, *expires, t)
		}
		if _, err := tx.Exec(ctx, `UPDATE civicgate.api_keys SET status = 'revoked',
			retired_at = coalesce(retired_at, CASE WHEN rotates_out_at <= $2 THEN rotates_out_at END, $2) WHERE id = $1`, keyID, t); err != nil {
			return fmt.Errorf("keystore: revoke: %w", err)
		}
		return notify(ctx, tx, "key:"+Hash(h).String())
	})
	return out, err
}

// SetOrgStatus suspends (OrgSuspended) or resumes (OrgActive) an organization.
func SetOrgStatus(ctx context.Context, pool *pgxpool.Pool, org, status string) error {
	if status != OrgActive && status != OrgSuspended {
		return fmt.Errorf("keystore: bad organization status %q", status)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		id, err := lockOrg(ctx, tx, org, false)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE civicgate.organizations SET status = $2,
			suspended_at = CASE WHEN $2 = 'suspended' THEN now() END WHERE id = $1`, id, status); err != nil {
			return fmt.Errorf("keystore: set organization status: %w", err)
		}
		return notify(ctx, tx, "org:"+id)
	})
}

// DeleteOrg deletes an organization: every key of it (all environments) is
// revoked, the organization is marked deleted (rows kept for audit: `keys
// list` and `keys usage` still show them; the name is not reused) and, when
// the webhooks tables exist in the database, its webhook endpoints are
// removed with their deliveries — all in one transaction.
func DeleteOrg(ctx context.Context, pool *pgxpool.Pool, org string) (Deletion, error) {
	var out Deletion
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		id, err := lockOrg(ctx, tx, org, false)
		if err != nil {
			return err
		}
		out = Deletion{OrgID: id}
		t := now()
		tag, err := tx.Exec(ctx, `UPDATE civicgate.api_keys SET status = 'revoked',
			retired_at = coalesce(retired_at, CASE WHEN rotates_out_at <= $2 THEN rotates_out_at END, $2)
			WHERE org_id = $1 AND status <> 'revoked'`, id, t)
		if err != nil {
			return fmt.Errorf("keystore: revoke the organization's keys: %w", err)
		}
		out.Revoked = int(tag.RowsAffected())
		if _, err := tx.Exec(ctx, `UPDATE civicgate.organizations SET status = 'deleted', deleted_at = $2 WHERE id = $1`, id, t); err != nil {
			return fmt.Errorf("keystore: delete organization: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT to_regclass('civicgate.webhook_endpoints') IS NOT NULL`).Scan(&out.WebhookTables); err != nil {
			return fmt.Errorf("keystore: find the webhooks tables: %w", err)
		}
		if out.WebhookTables {
			// Deliveries go with their endpoint (ON DELETE CASCADE).
			tag, err := tx.Exec(ctx, `DELETE FROM civicgate.webhook_endpoints WHERE org_id = $1`, id)
			if err != nil {
				return fmt.Errorf("keystore: remove webhook endpoints: %w", err)
			}
			out.Endpoints = tag.RowsAffected()
		}
		return notify(ctx, tx, "org:"+id)
	})
	return out, err
}

// ListFilter narrows List; empty fields match everything.
type ListFilter struct {
	Org, Env, Tier string
	// ExpiringWithin, when positive, keeps only the live keys (active or
	// rotating, not yet expired or rotated out) whose expiry comes within it
	// (`keys list --expiring 7d`).
	ExpiringWithin time.Duration
}

// keep reports whether f keeps k (listed at now): List and ListFile apply
// the same filter.
func (f ListFilter) keep(k KeyInfo, now time.Time) bool {
	if f.Org != "" && k.Org != f.Org || f.Env != "" && k.Env != f.Env || f.Tier != "" && k.Tier != f.Tier {
		return false
	}
	if f.ExpiringWithin > 0 {
		live := k.Status == StatusActive || k.Status == StatusRotating
		return live && k.ExpiresAt != nil && k.ExpiresAt.Sub(now) <= f.ExpiringWithin
	}
	return true
}

// List returns the keys (never keys or hashes) matching f, by organization
// name then age. Status is the effective one: a rotating key past its
// overlap is listed as rotated, retired at its deadline; a key revoked
// during its overlap has no RotatesOutAt (it never rotates out).
func List(ctx context.Context, pool *pgxpool.Pool, f ListFilter) ([]KeyInfo, error) {
	t := now()
	rows, err := pool.Query(ctx, `SELECT k.id, o.name, o.status, k.env, k.tier, k.key_prefix,
			CASE WHEN k.status = 'rotating' AND k.rotates_out_at <= $4 THEN 'rotated'
				WHEN k.status IN ('active','rotating') AND k.expires_at <= $4 THEN 'expired' ELSE k.status END,
			k.created_at, coalesce(k.retired_at, CASE WHEN k.status = 'rotating' AND k.rotates_out_at <= $4 THEN k.rotates_out_at END),
			k.rotates_out_at, k.expires_at, k.name, k.labels
		FROM civicgate.api_keys k JOIN civicgate.organizations o ON o.id = k.org_id
		WHERE ($1 = '' OR o.name = $1) AND ($2 = '' OR k.env = $2) AND ($3 = '' OR k.tier = $3)
		ORDER BY o.name, k.created_at, k.id`, f.Org, f.Env, f.Tier, t)
	if err != nil {
		return nil, fmt.Errorf("keystore: list: %w", err)
	}
	infos, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (KeyInfo, error) {
		var k KeyInfo
		err := row.Scan(&k.ID, &k.Org, &k.OrgStatus, &k.Env, &k.Tier, &k.Prefix, &k.Status, &k.CreatedAt, &k.RetiredAt, &k.RotatesOutAt,
			&k.ExpiresAt, &k.Name, &k.Labels)
		k.RotatesOutAt = rotatesOut(k)
		if len(k.Labels) == 0 {
			k.Labels = nil
		}
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("keystore: list: %w", err)
	}
	if f.ExpiringWithin > 0 {
		infos = slices.DeleteFunc(infos, func(k KeyInfo) bool { return !f.keep(k, t) })
	}
	return infos, nil
}
