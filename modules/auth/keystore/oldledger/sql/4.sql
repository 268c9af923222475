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
	CREATE INDEX api_keys_org_live ON civicgate.api_keys (org_id, tier) WHERE status IN ('active','rotating');