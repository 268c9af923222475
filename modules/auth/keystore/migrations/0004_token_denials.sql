-- The deny list of access tokens (denials.go, `civicgate tokens`): a subject or a token id, of one issuer or
-- ('') of any, until expires_at (NULL: until undenied). The bounds match Denial.Check; values hold no control
-- characters (they are printed to operators' terminals). Was version 5 of civicgate.civic_auth_migrations.
CREATE TABLE civicgate.token_denials (
	kind       text NOT NULL CHECK (kind IN ('sub','jti')),
	issuer     text NOT NULL DEFAULT '' CHECK (octet_length(issuer) <= 1024 AND issuer !~ '[\x01-\x1f\x7f]'),
	value      text NOT NULL CHECK (octet_length(value) BETWEEN 1 AND 512 AND value !~ '[\x01-\x1f\x7f]'),
	reason     text NOT NULL DEFAULT '' CHECK (octet_length(reason) <= 1024 AND reason !~ '[\x01-\x1f\x7f]'),
	created_at timestamptz NOT NULL DEFAULT now(),
	expires_at timestamptz CHECK (expires_at > created_at),
	actor      text NOT NULL CHECK (octet_length(actor) <= 256),
	PRIMARY KEY (kind, issuer, value)
);
