-- 0100: mirror sync bookkeeping (owned by backend/sync; see backend/sync/README.md).
--
-- change_events is the change feed (DESIGN §3.8). Contract for readers (e.g. the webhook sidecar):
--   SELECT … FROM change_events WHERE id > $cursor AND family = ANY($families) ORDER BY id LIMIT n
-- never skips a committed event, because every writer takes pg_advisory_xact_lock(7240118100) before it
-- draws ids from the sequence and holds it until commit (single writer): ids become visible in id order.
CREATE TABLE IF NOT EXISTS change_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),   -- stable; the webhook-id
    family          text NOT NULL CHECK (family IN ('bills', 'members', 'regulatory_filings', 'federal_budgets', 'lobbying_disclosures')),
    record_id       text NOT NULL,
    type            text NOT NULL CHECK (type IN ('created', 'updated', 'deleted')),
    changed_fields  text[] NOT NULL DEFAULT '{}',
    record          jsonb NOT NULL,                                   -- the record as the API shows it
    source          text NOT NULL DEFAULT '',
    occurred_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS change_events_family_idx ON change_events (family, id);
CREATE INDEX IF NOT EXISTS change_events_record_idx ON change_events (family, record_id, id);

-- The last imported normalized content of every synced record (what the API shows, without last_synced_at):
-- the comparison base for "unchanged → write nothing" and for changed_fields.
CREATE TABLE IF NOT EXISTS sync_snapshots (
    family      text NOT NULL,
    record_id   text NOT NULL,
    source      text NOT NULL,
    content     jsonb NOT NULL,
    deleted_at  timestamptz,
    seen_at     timestamptz NOT NULL DEFAULT now(),   -- last --full-snapshot run that listed it
    PRIMARY KEY (family, record_id)
);
CREATE INDEX IF NOT EXISTS sync_snapshots_source_idx ON sync_snapshots (family, source) WHERE deleted_at IS NULL;

-- Resume point of an interrupted --url import, per family and source.
CREATE TABLE IF NOT EXISTS sync_state (
    family      text NOT NULL,
    source      text NOT NULL,
    base_url    text NOT NULL DEFAULT '',
    cursor      text NOT NULL DEFAULT '',
    run_started_at timestamptz NOT NULL DEFAULT now(),   -- start of the (possibly resumed) run
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (family, source)
);
