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
	-- the hourly rollup: the same columns, key and indexes
	CREATE TABLE civicgate.usage_hour (LIKE civicgate.usage_minute INCLUDING ALL);`,
	// 3: rotation with an overlap (docs/design.md D8): a rotated key stays accepted as
	// "rotating" until rotates_out_at and counts as one of the two live keys;
	// gateways compare the deadline with their clock, so it ends without a
	// command. Organizations can be deleted (keys revoked, rows kept for
	// audit, the name not reused).
	`ALTER TABLE civicgate.api_keys DROP CONSTRAINT api_keys_status_check;
	ALTER TABLE civicgate.api_keys ADD CONSTRAINT api_keys_status_check
		CHECK (status IN ('active','rotating','revoked','rotated'));
	ALTER TABLE civicgate.api_keys ADD COLUMN rotates_out_at timestamptz;
	ALTER TABLE civicgate.api_keys ADD CONSTRAINT api_keys_rotating_deadline
		CHECK (status <> 'rotating' OR rotates_out_at IS NOT NULL);
	CREATE INDEX api_keys_rotating ON civicgate.api_keys (org_id, env) WHERE status = 'rotating';
	ALTER TABLE civicgate.organizations DROP CONSTRAINT organizations_status_check;
	ALTER TABLE civicgate.organizations ADD CONSTRAINT organizations_status_check
		CHECK (status IN ('active','suspended','deleted'));
	ALTER TABLE civicgate.organizations ADD COLUMN deleted_at timestamptz;`,
	// 4: the organization console (modules/console, docs/design.md D34):
	// one-time sign-in links and sessions, both stored only as SHA-256 hashes
	// of their tokens; OIDC sign-ins in flight (state → PKCE verifier, nonce);
	// the audit log of every change made from the console or the key
	// commands. An operator's session and link have no organization.
	`CREATE TABLE civicgate.console_links (
		token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
		org_id     text REFERENCES civicgate.organizations(id),
		email      text NOT NULL,
		role       text NOT NULL CHECK (role IN ('viewer','admin','operator')),
		created_by text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now(),
		expires_at timestamptz NOT NULL,
		used_at    timestamptz,
		CHECK (role = 'operator' OR org_id IS NOT NULL)
	);
	CREATE TABLE civicgate.console_sessions (
		id_hash      bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),
		email        text NOT NULL,
		org_id       text REFERENCES civicgate.organizations(id),
		role         text NOT NULL CHECK (role IN ('viewer','admin','operator')),
		via          text NOT NULL CHECK (via IN ('link','oidc')),
		client_addr  text NOT NULL DEFAULT '',
		created_at   timestamptz NOT NULL DEFAULT now(),
		last_seen_at timestamptz NOT NULL DEFAULT now(),
		expires_at   timestamptz NOT NULL,
		ended_at     timestamptz,
		CHECK (role = 'operator' OR org_id IS NOT NULL)
	);
	CREATE INDEX console_sessions_email ON civicgate.console_sessions (email) WHERE ended_at IS NULL;
	CREATE TABLE civicgate.console_oidc_flows (
		state_hash bytea PRIMARY KEY CHECK (octet_length(state_hash) = 32),
		verifier   text NOT NULL,
		nonce      text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE civicgate.audit_log (
		id          bigserial PRIMARY KEY,
		at          timestamptz NOT NULL DEFAULT now(),
		actor       text NOT NULL,
		role        text NOT NULL,
		org_id      text,
		action      text NOT NULL,
		target      text NOT NULL DEFAULT '',
		detail      text NOT NULL DEFAULT '',
		client_addr text NOT NULL DEFAULT ''
	);
	CREATE INDEX audit_log_org ON civicgate.audit_log (org_id, id);
	CREATE INDEX api_keys_org_created ON civicgate.api_keys (org_id, created_at DESC, id DESC);
	CREATE INDEX api_keys_org_live ON civicgate.api_keys (org_id, tier) WHERE status IN ('active','rotating');`,
	// 5: the deny list of access tokens (denials.go, `civicgate tokens`): a
	// subject or a token id, of one issuer or ('') of any, until expires_at
	// (NULL: until undenied). The bounds match Denial.Check; values hold no
	// control characters (they are printed to operators' terminals).
	`CREATE TABLE civicgate.token_denials (
		kind       text NOT NULL CHECK (kind IN ('sub','jti')),
		issuer     text NOT NULL DEFAULT '' CHECK (octet_length(issuer) <= 1024 AND issuer !~ '[\x01-\x1f\x7f]'),
		value      text NOT NULL CHECK (octet_length(value) BETWEEN 1 AND 512 AND value !~ '[\x01-\x1f\x7f]'),
		reason     text NOT NULL DEFAULT '' CHECK (octet_length(reason) <= 1024 AND reason !~ '[\x01-\x1f\x7f]'),
		created_at timestamptz NOT NULL DEFAULT now(),
		expires_at timestamptz CHECK (expires_at > created_at),
		actor      text NOT NULL CHECK (octet_length(actor) <= 256),
		PRIMARY KEY (kind, issuer, value)
	);`,
	// 6: usage made through MCP (docs/design.md D45): of a row's requests, how
	// many civic_mcp made for tool calls.
	`ALTER TABLE civicgate.usage_minute ADD COLUMN mcp_calls bigint NOT NULL DEFAULT 0;
	ALTER TABLE civicgate.usage_hour ADD COLUMN mcp_calls bigint NOT NULL DEFAULT 0;`,
	// 7: the usage flushes applied (modules/ratelimit/usage WriteBatch): a
	// flush whose commit landed but whose acknowledgement was lost is retried
	// under the same id and applied once. Pruned with the minute rows.
	`CREATE TABLE civicgate.usage_flushes (
		id         text PRIMARY KEY CHECK (octet_length(id) BETWEEN 1 AND 64),
		applied_at timestamptz NOT NULL DEFAULT now()
	);
	CREATE INDEX usage_flushes_applied ON civicgate.usage_flushes USING brin (applied_at);`,
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

// Lookup finds the key with hash h (ErrNotFound if none).
func Lookup(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, h Hash) (Record, error) {
	var r Record
	var until *time.Time
	err := q.QueryRow(ctx, `SELECT k.id, k.org_id, o.name, o.status, k.env, k.tier, k.status, k.rotates_out_at
		FROM civicgate.api_keys k JOIN civicgate.organizations o ON o.id = k.org_id WHERE k.key_hash = $1`, h[:]).
		Scan(&r.KeyID, &r.OrgID, &r.OrgName, &r.OrgStatus, &r.Env, &r.Tier, &r.Status, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("keystore: lookup: %w", err)
	}
	if until != nil && r.Status == StatusRotating {
		r.RotatesOut = *until
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
