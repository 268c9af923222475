package keystore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channel is the LISTEN/NOTIFY channel on which key changes are announced.
// Payloads: "key:<hex hash>" (one key changed) or "org:<org id>" (every key of
// an organization changed), and "deny:sub" or "deny:jti" (the token deny
// list changed: a gateway reloads the whole unexpired list with LoadDenials;
// denials.go).
const Channel = "civicgate_auth"

// MaxLiveKeys is how many active keys an organization may hold per
// environment (docs/design.md D8).
const MaxLiveKeys = 2

var tierName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ValidTier reports whether name can be a tier name.
func ValidTier(name string) bool { return tierName.MatchString(name) }

// Lookup finds the key with hash h (ErrNotFound if none).
func Lookup(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, h Hash) (Record, error) {
	var r Record
	var until, expires, grantUntil *time.Time
	err := q.QueryRow(ctx, `SELECT k.id, k.org_id, o.name, o.status, k.env, k.tier, k.status, k.rotates_out_at,
			k.expires_at, k.name, k.labels, coalesce(g.requests, 0), coalesce(g.cost, 0), g.until
		FROM civicgate.api_keys k JOIN civicgate.organizations o ON o.id = k.org_id
		LEFT JOIN civicgate.org_grants g ON g.org_id = k.org_id
		WHERE k.key_hash = $1`, h[:]).
		Scan(&r.KeyID, &r.OrgID, &r.OrgName, &r.OrgStatus, &r.Env, &r.Tier, &r.Status, &until, &expires, &r.Name, &r.Labels,
			&r.GrantRequests, &r.GrantCost, &grantUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("keystore: lookup: %w", err)
	}
	if until != nil && r.Status == StatusRotating {
		r.RotatesOut = *until
	}
	if expires != nil {
		r.ExpiresAt = *expires
	}
	if len(r.Labels) == 0 {
		r.Labels = nil
	}
	if grantUntil != nil {
		r.GrantUntil = grantUntil.UTC()
	}
	return r, nil
}

func checkArgs(org, tier, env string) error {
	if org == "" {
		return errors.New("keystore: organization name is empty")
	}
	if !ValidTier(tier) {
		return fmt.Errorf("keystore: bad tier name %q", tier)
	}
	if !ValidEnv(env) {
		return fmt.Errorf("keystore: environment %q is not live or test", env)
	}
	return nil
}

// lockOrg returns the organization's id, locking its row for the rest of the
// transaction so concurrent changes cannot exceed MaxLiveKeys, and records as
// rotated out the organization's rotating keys whose overlap has ended (they
// already are for every gateway; this keeps the rows and the live count
// plain). A deleted organization is refused (ErrOrgDeleted).
func lockOrg(ctx context.Context, tx pgx.Tx, org string, create bool) (string, error) {
	if create {
		id, err := newID("org_")
		if err != nil {
			return "", err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO civicgate.organizations (id, name) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, id, org); err != nil {
			return "", fmt.Errorf("keystore: create organization: %w", err)
		}
	}
	var id, status string
	var deletedAt *time.Time
	err := tx.QueryRow(ctx, `SELECT id, status, deleted_at FROM civicgate.organizations WHERE name = $1 FOR UPDATE`, org).
		Scan(&id, &status, &deletedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNoSuchOrg
	}
	if err != nil {
		return "", fmt.Errorf("keystore: lock organization: %w", err)
	}
	if status == OrgDeleted {
		return "", orgDeleted(org, deletedAt)
	}
	if _, err := tx.Exec(ctx, `UPDATE civicgate.api_keys SET status = 'rotated', retired_at = rotates_out_at
		WHERE org_id = $1 AND status = 'rotating' AND rotates_out_at <= $2`, id, now()); err != nil {
		return "", fmt.Errorf("keystore: end overlaps: %w", err)
	}
	return id, nil
}

func insertKey(ctx context.Context, tx pgx.Tx, orgID, tier, env string, l Lifecycle) (Issued, error) {
	key, err := NewKey(env)
	if err != nil {
		return Issued{}, err
	}
	id, err := newID("key_")
	if err != nil {
		return Issued{}, err
	}
	h := HashKey(key)
	labels := l.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	var expires *time.Time
	if !l.ExpiresAt.IsZero() {
		expires = &l.ExpiresAt
	}
	if _, err := tx.Exec(ctx, `INSERT INTO civicgate.api_keys (id, org_id, env, tier, key_hash, key_prefix, name, labels, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		id, orgID, env, tier, h[:], key[:PrefixLen], l.Name, labels, expires); err != nil {
		return Issued{}, fmt.Errorf("keystore: insert key: %w", err)
	}
	// A gateway may hold a negative cache entry for this hash.
	if err := notify(ctx, tx, "key:"+h.String()); err != nil {
		return Issued{}, err
	}
	return Issued{ID: id, OrgID: orgID, Key: key}, nil
}

func notify(ctx context.Context, tx pgx.Tx, payload string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, payload); err != nil {
		return fmt.Errorf("keystore: notify: %w", err)
	}
	return nil
}

// now is used by the file store; kept here so tests can see one clock source.
func now() time.Time { return time.Now().UTC() }
