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