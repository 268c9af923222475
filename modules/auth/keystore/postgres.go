package keystore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channel is the LISTEN/NOTIFY channel on which key changes are announced.
// Payloads: "key:<hex hash>" (one key changed) or "org:<org id>" (every key of
// an organization changed).
const Channel = "civicgate_auth"

// MaxLiveKeys is how many active keys an organization may hold per
// environment (docs/design.md D8).
const MaxLiveKeys = 2

// ErrTooManyKeys is returned when issuing would exceed MaxLiveKeys.
var ErrTooManyKeys = errors.New("keystore: organization already has 2 live keys in this environment; rotate or revoke one first")

// ErrNoSuchOrg is returned for an unknown organization name.
var ErrNoSuchOrg = errors.New("keystore: no such organization")

// ErrNoSuchKey is returned for an unknown key id.
var ErrNoSuchKey = errors.New("keystore: no such key")

// ErrNothingToRotate is returned by Rotate when the organization has no live key.
var ErrNothingToRotate = errors.New("keystore: organization has no live key in this environment to rotate; use issue")

var tierName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ValidTier reports whether name can be a tier name.
func ValidTier(name string) bool { return tierName.MatchString(name) }

// migrations are applied in order, each once, tracked in
// civicgate.civic_auth_migrations (the backend owns public.schema_migrations).
var migrations = []string{
	`CREATE TABLE civicgate.organizations (
		id           text PRIMARY KEY,
		name         text NOT NULL UNIQUE,
		status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active','suspended')),
		created_at   timestamptz NOT NULL DEFAULT now(),
		suspended_at timestamptz
	);
	CREATE TABLE civicgate.api_keys (
		id         text PRIMARY KEY,
		org_id     text NOT NULL REFERENCES civicgate.organizations(id),
		env        text NOT NULL CHECK (env IN ('live','test')),
		tier       text NOT NULL,
		key_hash   bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
		key_prefix text NOT NULL,
		status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active','revoked','rotated')),
		created_at timestamptz NOT NULL DEFAULT now(),
		retired_at timestamptz
	);
	CREATE INDEX api_keys_live ON civicgate.api_keys (org_id, env, created_at) WHERE status = 'active';`,
	// 2: usage per key and minute / hour (modules/ratelimit/usage), written
	// additively by every gateway. No foreign keys: a gateway reading a keys
	// file counts keys the database does not know. The BRIN index on start
	// serves the hourly prune.
	`CREATE TABLE civicgate.usage_minute (
		key_id        text NOT NULL,
		org_id        text NOT NULL,
		start         timestamptz NOT NULL,
		admitted      bigint NOT NULL DEFAULT 0,
		refused       bigint NOT NULL DEFAULT 0,
		client_errors bigint NOT NULL DEFAULT 0,
		server_errors bigint NOT NULL DEFAULT 0,
		cost          bigint NOT NULL DEFAULT 0,
		PRIMARY KEY (key_id, start)
	);
	CREATE INDEX usage_minute_org ON civicgate.usage_minute (org_id, start);
	CREATE INDEX usage_minute_start ON civicgate.usage_minute USING brin (start);
	CREATE TABLE civicgate.usage_hour (
		key_id        text NOT NULL,
		org_id        text NOT NULL,
		start         timestamptz NOT NULL,
		admitted      bigint NOT NULL DEFAULT 0,
		refused       bigint NOT NULL DEFAULT 0,
		client_errors bigint NOT NULL DEFAULT 0,
		server_errors bigint NOT NULL DEFAULT 0,
		cost          bigint NOT NULL DEFAULT 0,
		PRIMARY KEY (key_id, start)
	);
	CREATE INDEX usage_hour_org ON civicgate.usage_hour (org_id, start);
	CREATE INDEX usage_hour_start ON civicgate.usage_hour USING brin (start);`,
}

// Migrate creates or upgrades the key schema; it is idempotent and safe to run
// concurrently.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('civicgate.civic_auth_migrations'))`); err != nil {
			return fmt.Errorf("keystore: migrate lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS civicgate;
			CREATE TABLE IF NOT EXISTS civicgate.civic_auth_migrations (
				version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("keystore: migrate: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM civicgate.civic_auth_migrations`).Scan(&have); err != nil {
			return fmt.Errorf("keystore: migrate: %w", err)
		}
		for v := have + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("keystore: migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO civicgate.civic_auth_migrations (version) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("keystore: migration %d: %w", v, err)
			}
		}
		return nil
	})
}

// Issued is a newly created key. Key is shown to the operator once and never stored.
type Issued struct {
	ID    string
	OrgID string
	Key   string
	// Retired is the key id rotated out by Rotate, if any.
	Retired string
}

// Issue creates a key of tier for the organization org in env, creating the
// organization if needed. It refuses a third live key (ErrTooManyKeys).
func Issue(ctx context.Context, pool *pgxpool.Pool, org, tier, env string) (Issued, error) {
	if err := checkArgs(org, tier, env); err != nil {
		return Issued{}, err
	}
	var out Issued
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		orgID, err := lockOrg(ctx, tx, org, true)
		if err != nil {
			return err
		}
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM civicgate.api_keys WHERE org_id = $1 AND env = $2 AND status = 'active'`,
			orgID, env).Scan(&live); err != nil {
			return fmt.Errorf("keystore: count keys: %w", err)
		}
		if live >= MaxLiveKeys {
			return ErrTooManyKeys
		}
		out, err = insertKey(ctx, tx, orgID, tier, env)
		return err
	})
	return out, err
}

// Rotate issues a new key for org in env and retires the oldest live one
// (status "rotated"). With tier empty the retired key's tier is kept.
func Rotate(ctx context.Context, pool *pgxpool.Pool, org, tier, env string) (Issued, error) {
	if !ValidEnv(env) {
		return Issued{}, fmt.Errorf("keystore: environment %q is not live or test", env)
	}
	if tier != "" && !ValidTier(tier) {
		return Issued{}, fmt.Errorf("keystore: bad tier name %q", tier)
	}
	var out Issued
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		orgID, err := lockOrg(ctx, tx, org, false)
		if err != nil {
			return err
		}
		var oldID, oldTier string
		var oldHash []byte
		err = tx.QueryRow(ctx, `SELECT id, tier, key_hash FROM civicgate.api_keys
			WHERE org_id = $1 AND env = $2 AND status = 'active' ORDER BY created_at, id LIMIT 1`, orgID, env).
			Scan(&oldID, &oldTier, &oldHash)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNothingToRotate
		}
		if err != nil {
			return fmt.Errorf("keystore: oldest key: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE civicgate.api_keys SET status = 'rotated', retired_at = now() WHERE id = $1`, oldID); err != nil {
			return fmt.Errorf("keystore: retire key: %w", err)
		}
		if err := notify(ctx, tx, "key:"+Hash(oldHash).String()); err != nil {
			return err
		}
		if tier == "" {
			tier = oldTier
		}
		out, err = insertKey(ctx, tx, orgID, tier, env)
		out.Retired = oldID
		return err
	})
	return out, err
}

// Revoke marks a key revoked.
func Revoke(ctx context.Context, pool *pgxpool.Pool, keyID string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var h []byte
		err := tx.QueryRow(ctx, `UPDATE civicgate.api_keys SET status = 'revoked', retired_at = coalesce(retired_at, now())
			WHERE id = $1 RETURNING key_hash`, keyID).Scan(&h)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoSuchKey
		}
		if err != nil {
			return fmt.Errorf("keystore: revoke: %w", err)
		}
		return notify(ctx, tx, "key:"+Hash(h).String())
	})
}

// SetOrgStatus suspends (OrgSuspended) or resumes (OrgActive) an organization.
func SetOrgStatus(ctx context.Context, pool *pgxpool.Pool, org, status string) error {
	if status != OrgActive && status != OrgSuspended {
		return fmt.Errorf("keystore: bad organization status %q", status)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var id string
		err := tx.QueryRow(ctx, `UPDATE civicgate.organizations SET status = $2,
			suspended_at = CASE WHEN $2 = 'suspended' THEN now() END WHERE name = $1 RETURNING id`, org, status).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoSuchOrg
		}
		if err != nil {
			return fmt.Errorf("keystore: set organization status: %w", err)
		}
		return notify(ctx, tx, "org:"+id)
	})
}

// List returns the keys (never keys or hashes), optionally of one organization.
func List(ctx context.Context, pool *pgxpool.Pool, org string) ([]KeyInfo, error) {
	rows, err := pool.Query(ctx, `SELECT k.id, o.name, o.status, k.env, k.tier, k.key_prefix, k.status, k.created_at, k.retired_at
		FROM civicgate.api_keys k JOIN civicgate.organizations o ON o.id = k.org_id
		WHERE $1 = '' OR o.name = $1 ORDER BY o.name, k.created_at, k.id`, org)
	if err != nil {
		return nil, fmt.Errorf("keystore: list: %w", err)
	}
	infos, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (KeyInfo, error) {
		var k KeyInfo
		err := row.Scan(&k.ID, &k.Org, &k.OrgStatus, &k.Env, &k.Tier, &k.Prefix, &k.Status, &k.CreatedAt, &k.RetiredAt)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("keystore: list: %w", err)
	}
	return infos, nil
}

// Lookup finds the key with hash h (ErrNotFound if none).
func Lookup(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, h Hash) (Record, error) {
	var r Record
	err := q.QueryRow(ctx, `SELECT k.id, k.org_id, o.name, o.status, k.env, k.tier, k.status
		FROM civicgate.api_keys k JOIN civicgate.organizations o ON o.id = k.org_id WHERE k.key_hash = $1`, h[:]).
		Scan(&r.KeyID, &r.OrgID, &r.OrgName, &r.OrgStatus, &r.Env, &r.Tier, &r.Status)
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("keystore: lookup: %w", err)
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
// transaction so concurrent issues cannot exceed MaxLiveKeys.
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
	var id string
	err := tx.QueryRow(ctx, `SELECT id FROM civicgate.organizations WHERE name = $1 FOR UPDATE`, org).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNoSuchOrg
	}
	if err != nil {
		return "", fmt.Errorf("keystore: lock organization: %w", err)
	}
	return id, nil
}

func insertKey(ctx context.Context, tx pgx.Tx, orgID, tier, env string) (Issued, error) {
	key, err := NewKey(env)
	if err != nil {
		return Issued{}, err
	}
	id, err := newID("key_")
	if err != nil {
		return Issued{}, err
	}
	h := HashKey(key)
	if _, err := tx.Exec(ctx, `INSERT INTO civicgate.api_keys (id, org_id, env, tier, key_hash, key_prefix) VALUES ($1, $2, $3, $4, $5, $6)`,
		id, orgID, env, tier, h[:], key[:PrefixLen]); err != nil {
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
