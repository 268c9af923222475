-- The organization console (docs/design.md D34): one-time sign-in links and sessions, both stored only as
-- SHA-256 hashes of their tokens, and OIDC sign-ins in flight (state → PKCE verifier, nonce). An operator's
-- session and link have no organization. Needs the key store's civicgate.organizations.
-- Was part of version 4 of civicgate.civic_auth_migrations (the audit log, now the key store's, was the rest).
CREATE TABLE civicgate.console_links (
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
