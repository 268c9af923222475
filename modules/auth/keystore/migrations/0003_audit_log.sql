-- The audit log of every change to an organization or its keys, made from the console or the key commands
-- (keystore.Audit; docs/design.md D34, D60), and the key indexes the console's pages read through.
-- Was part of version 4 of civicgate.civic_auth_migrations (the console's tables were the rest).
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
