-- Grants above the tier (docs/design.md D81): an organization's request quota and/or cost budget raised until a
-- time, without changing its tier. At most one grant per organization (a new one replaces it); the gateways read
-- it with each key (Lookup) and compare its end with their clock, so the tier's figures return without a command.
CREATE TABLE civicgate.org_grants (
	org_id     text PRIMARY KEY REFERENCES civicgate.organizations(id),
	requests   bigint CHECK (requests > 0),
	cost       bigint CHECK (cost > 0),
	until      timestamptz NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	CHECK (requests IS NOT NULL OR cost IS NOT NULL),
	CHECK (until > created_at)
);
