-- Rotation with an overlap (docs/design.md D8): a rotated key stays accepted as "rotating" until rotates_out_at
-- and counts as one of the two live keys; gateways compare the deadline with their clock, so it ends without a
-- command. Organizations can be deleted (keys revoked, rows kept for audit, the name not reused).
-- Was version 3 of civicgate.civic_auth_migrations.
ALTER TABLE civicgate.api_keys DROP CONSTRAINT api_keys_status_check;
ALTER TABLE civicgate.api_keys ADD CONSTRAINT api_keys_status_check
	CHECK (status IN ('active','rotating','revoked','rotated'));
ALTER TABLE civicgate.api_keys ADD COLUMN rotates_out_at timestamptz;
ALTER TABLE civicgate.api_keys ADD CONSTRAINT api_keys_rotating_deadline
	CHECK (status <> 'rotating' OR rotates_out_at IS NOT NULL);
CREATE INDEX api_keys_rotating ON civicgate.api_keys (org_id, env) WHERE status = 'rotating';
ALTER TABLE civicgate.organizations DROP CONSTRAINT organizations_status_check;
ALTER TABLE civicgate.organizations ADD CONSTRAINT organizations_status_check
	CHECK (status IN ('active','suspended','deleted'));
ALTER TABLE civicgate.organizations ADD COLUMN deleted_at timestamptz;
