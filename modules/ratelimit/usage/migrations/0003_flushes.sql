-- The usage flushes applied (WriteBatch): a flush whose commit landed but whose acknowledgement was lost is
-- retried under the same id and applied once. Pruned with the minute rows.
-- Was version 7 of civicgate.civic_auth_migrations.
CREATE TABLE civicgate.usage_flushes (
	id         text PRIMARY KEY CHECK (octet_length(id) BETWEEN 1 AND 64),
	applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_flushes_applied ON civicgate.usage_flushes USING brin (applied_at);
