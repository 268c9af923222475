-- civic_webhooks 0005 (docs/design.md D39): an endpoint that cannot be used is set aside on its own, and the
-- sealing key is checked against a canary before anything is sealed or claimed.

-- unusable: its secret cannot be opened with the sealing key, its URL is no longer allowed by the egress rules,
-- or its organization was deleted; unusable_reason says which (one of store.Reason*). Its due deliveries are
-- failed with the same reason; a replay re-enables it (and sets it aside again if the cause remains).
ALTER TABLE civicgate.webhook_endpoints DROP CONSTRAINT webhook_endpoints_status_check;
ALTER TABLE civicgate.webhook_endpoints ADD CONSTRAINT webhook_endpoints_status_check
    CHECK (status IN ('active', 'disabled', 'unusable'));
ALTER TABLE civicgate.webhook_endpoints ADD COLUMN unusable_reason text NOT NULL DEFAULT '';
-- When the secrets were last sealed (database clock): a secret sealed after a process checked its key may be
-- sealed with a newer key than that process holds, so that process never sets the endpoint aside for it.
ALTER TABLE civicgate.webhook_endpoints ADD COLUMN sealed_at timestamptz;
UPDATE civicgate.webhook_endpoints SET sealed_at = updated_at;
ALTER TABLE civicgate.webhook_endpoints ALTER COLUMN sealed_at SET NOT NULL,
    ALTER COLUMN sealed_at SET DEFAULT clock_timestamp();

-- The key canary: a known value sealed with the key material (associated data "civicgate.webhook_key_canary").
-- A process whose key cannot open it refuses to start; `civicgate webhooks rekey` re-seals it last.
CREATE TABLE civicgate.webhook_key_canary (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    sealed      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    resealed_at timestamptz
);
