CREATE TABLE civicgate.usage_minute (
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
	CREATE TABLE civicgate.usage_hour (LIKE civicgate.usage_minute INCLUDING ALL);