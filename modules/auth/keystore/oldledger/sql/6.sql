ALTER TABLE civicgate.usage_minute ADD COLUMN mcp_calls bigint NOT NULL DEFAULT 0;
	ALTER TABLE civicgate.usage_hour ADD COLUMN mcp_calls bigint NOT NULL DEFAULT 0;