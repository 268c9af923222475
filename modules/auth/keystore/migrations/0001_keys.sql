-- Organizations and their API keys (keys stored only as SHA-256 hashes; docs/design.md D8: at most two live
-- keys per organization and environment). Was version 1 of civicgate.civic_auth_migrations.
CREATE TABLE civicgate.organizations (
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
CREATE INDEX api_keys_live ON civicgate.api_keys (org_id, env, created_at) WHERE status = 'active';
