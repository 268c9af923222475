-- civic_webhooks 0006 (docs/design.md D79): notices to an organization, such as a deprecated field its keys use,
-- delivered once to each of its active endpoints whatever their families, signed and retried as change events.

-- Each notice once per organization and subject (for a deprecation: the schema coordinate). payload is the body
-- every endpoint received (the envelope, as a ping's), kept for the record.
CREATE TABLE civicgate.webhook_notices (
    org_id     text NOT NULL,
    subject    text NOT NULL,
    event_id   uuid NOT NULL,
    payload    bytea NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, subject)
);

-- A notice's deliveries carry their body in payload, as a test ping's, and no family (never cancelled for one).
ALTER TABLE civicgate.webhook_deliveries DROP CONSTRAINT webhook_deliveries_kind_check;
ALTER TABLE civicgate.webhook_deliveries ADD CONSTRAINT webhook_deliveries_kind_check
    CHECK (kind IN ('event', 'replay', 'test', 'notice'));

-- Only change events get a family from change_events (Reconcile): a notice has none to find.
DROP INDEX civicgate.webhook_deliveries_unfamilied;
CREATE INDEX webhook_deliveries_unfamilied ON civicgate.webhook_deliveries (id)
    WHERE family IS NULL AND kind IN ('event', 'replay') AND status IN ('pending', 'delivering', 'parked');
