-- civic_webhooks 0001: endpoints, deliveries and the fan-out position (schema civicgate).
-- Reads the backend's public change_events table (contract: backend/migrations/sql/0100_sync.sql).
CREATE TABLE civicgate.webhook_endpoints (
    id                 text PRIMARY KEY,                 -- we_<hex>
    org_id             text NOT NULL,                    -- {civic.org} of the creator; every API query filters on it
    url                text NOT NULL,
    families           text[] NOT NULL,
    description        text NOT NULL DEFAULT '',
    secret_sealed      bytea NOT NULL,                   -- AES-256-GCM (secretbox), associated data = id
    prev_secret_sealed bytea,                            -- the rotated-out secret, still signed with until prev_secret_until
    prev_secret_until  timestamptz,
    status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    disabled_reason    text NOT NULL DEFAULT '',
    start_seq          bigint NOT NULL,                  -- newest change_events.id at creation: older events are not pushed
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_org ON civicgate.webhook_endpoints (org_id, created_at, id);

CREATE TABLE civicgate.webhook_deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id      text NOT NULL REFERENCES civicgate.webhook_endpoints (id) ON DELETE CASCADE,
    kind             text NOT NULL CHECK (kind IN ('event', 'replay', 'test')),
    event_id         uuid NOT NULL,                      -- the webhook-id: change_events.event_id, or a ping's own
    event_seq        bigint,                             -- change_events.id (NULL for a test ping)
    payload          bytea,                              -- body of a test ping; events are rendered from change_events
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivering', 'delivered', 'failed')),
    attempts         int NOT NULL DEFAULT 0,             -- attempts started (claimed)
    next_attempt_at  timestamptz NOT NULL,
    lease_token      uuid,                               -- set by the claiming sidecar; completion must present it
    lease_until      timestamptz,
    last_status_code int,
    last_error       text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    finished_at      timestamptz
);
-- An event is fanned out to an endpoint once; replays add rows of kind 'replay'.
CREATE UNIQUE INDEX webhook_deliveries_event_once ON civicgate.webhook_deliveries (endpoint_id, event_id) WHERE kind = 'event';
CREATE INDEX webhook_deliveries_due ON civicgate.webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status IN ('pending', 'delivering');
CREATE INDEX webhook_deliveries_list ON civicgate.webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_event ON civicgate.webhook_deliveries (endpoint_id, event_id);

-- Position of the fan-out in change_events (one row; locked by the instance fanning out).
CREATE TABLE civicgate.webhook_fanout (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_seq  bigint NOT NULL
);
INSERT INTO civicgate.webhook_fanout (last_seq) VALUES (0);
