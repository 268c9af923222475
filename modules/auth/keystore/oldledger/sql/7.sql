CREATE TABLE civicgate.usage_flushes (
		id         text PRIMARY KEY CHECK (octet_length(id) BETWEEN 1 AND 64),
		applied_at timestamptz NOT NULL DEFAULT now()
	);
	CREATE INDEX usage_flushes_applied ON civicgate.usage_flushes USING brin (applied_at);