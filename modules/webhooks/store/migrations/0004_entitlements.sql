-- civic_webhooks 0004 (docs/design.md D15): deliveries honour the organization's status and its current entitlements
-- (read from the key store's civicgate.organizations and civicgate.api_keys at fan-out and claim).

-- The key environment ({civic.env}) of the key that registered the endpoint: its entitlements are the tiers
-- of the organization's active keys in that environment. NULL (endpoints registered before): any environment.
ALTER TABLE civicgate.webhook_endpoints ADD COLUMN env text;

-- The event's family (NULL for a ping), so deliveries of a family the organization lost are found by index.
-- Rows written before (or by an older instance during a rolling upgrade) are filled in by the sidecar.
ALTER TABLE civicgate.webhook_deliveries ADD COLUMN family text;

-- parked: the organization is suspended or has no active key (back to pending when that changes);
-- cancelled: the organization is no longer entitled to the delivery's family (finished; replayable).
ALTER TABLE civicgate.webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE civicgate.webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
    CHECK (status IN ('pending', 'delivering', 'delivered', 'failed', 'parked', 'cancelled'));

CREATE INDEX webhook_deliveries_parked ON civicgate.webhook_deliveries (endpoint_id) WHERE status = 'parked';
CREATE INDEX webhook_deliveries_family ON civicgate.webhook_deliveries (endpoint_id, family)
    WHERE status IN ('pending', 'parked');
CREATE INDEX webhook_deliveries_unfamilied ON civicgate.webhook_deliveries (id)
    WHERE family IS NULL AND kind <> 'test' AND status IN ('pending', 'delivering', 'parked');

-- Retention prunes cancelled deliveries too.
DROP INDEX civicgate.webhook_deliveries_finished;
CREATE INDEX webhook_deliveries_finished_at ON civicgate.webhook_deliveries (finished_at)
    WHERE status IN ('delivered', 'failed', 'cancelled');
