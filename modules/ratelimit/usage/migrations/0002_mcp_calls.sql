-- Usage made through MCP (docs/design.md D45): of a row's requests, how many civic_mcp made for tool calls.
-- Was version 6 of civicgate.civic_auth_migrations.
ALTER TABLE civicgate.usage_minute ADD COLUMN mcp_calls bigint NOT NULL DEFAULT 0;
ALTER TABLE civicgate.usage_hour ADD COLUMN mcp_calls bigint NOT NULL DEFAULT 0;
