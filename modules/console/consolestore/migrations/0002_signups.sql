-- Self-serve sign-up (docs/design.md D74). A request waits for its address to be verified (pending), then, in
-- approve mode, for an operator (awaiting); approved it waits for the person to open the link of the approval
-- mail; done it has made its organization. Its link is stored as the SHA-256 hash of its token and is replaced
-- at approval, so each link works once. An address owns at most one request that is awaiting, approved or done.
CREATE TABLE civicgate.console_signups (
	id           text PRIMARY KEY,
	email        text NOT NULL,
	name         text NOT NULL,
	organization text NOT NULL,
	intended_use text NOT NULL,
	terms_url    text NOT NULL,
	client_addr  text NOT NULL DEFAULT '',
	status       text NOT NULL CHECK (status IN ('pending','awaiting','approved','refused','done')),
	token_hash   bytea CHECK (octet_length(token_hash) = 32),
	expires_at   timestamptz NOT NULL,
	org_id       text REFERENCES civicgate.organizations(id),
	decided_by   text NOT NULL DEFAULT '',
	created_at   timestamptz NOT NULL DEFAULT now(),
	updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX console_signups_token ON civicgate.console_signups (token_hash) WHERE token_hash IS NOT NULL;
CREATE UNIQUE INDEX console_signups_one_per_address ON civicgate.console_signups (email)
	WHERE status IN ('awaiting','approved','done');
CREATE INDEX console_signups_awaiting ON civicgate.console_signups (created_at) WHERE status = 'awaiting';
