-- A key's lifecycle (docs/design.md D71): an optional expiry, after which every gateway refuses the key with
-- "API key expired" by comparing it with its clock (no command ends it, as with a rotation overlap), and a
-- name and free-form labels that say whose key it is. The bounds match keystore.Lifecycle.Check; no control
-- characters (they are printed to operators' terminals and the console).
ALTER TABLE civicgate.api_keys
	ADD COLUMN name text NOT NULL DEFAULT ''
		CHECK (char_length(name) <= 100 AND name !~ '[\x01-\x1f\x7f]'),
	ADD COLUMN labels jsonb NOT NULL DEFAULT '{}'
		CHECK (jsonb_typeof(labels) = 'object' AND octet_length(labels::text) <= 16384),
	ADD COLUMN expires_at timestamptz
		CHECK (expires_at > created_at);
-- `keys list --expiring` and the live-key count read the keys that will expire.
CREATE INDEX api_keys_expiring ON civicgate.api_keys (expires_at)
	WHERE expires_at IS NOT NULL AND status IN ('active','rotating');
