-- The metering export's position (docs/design.md D73): everything up to (after_start, after_key) in (start,
-- key_id) order of civicgate.usage_hour has been delivered. The row is locked FOR UPDATE SKIP LOCKED while a
-- batch is sent, so one gateway at a time exports; it moves in the transaction that records the batch.
CREATE TABLE civicgate.usage_export_cursors (
	name        text PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 64),
	after_start timestamptz NOT NULL,
	after_key   text NOT NULL DEFAULT '',
	updated_at  timestamptz NOT NULL DEFAULT now()
);
-- The batches a sink answered 2xx: what was sent and when (ids are derived, not stored). Pruned after 90 days.
CREATE TABLE civicgate.usage_export_batches (
	cursor_name  text NOT NULL,
	first_start  timestamptz NOT NULL,
	first_key    text NOT NULL,
	last_start   timestamptz NOT NULL,
	last_key     text NOT NULL,
	events       integer NOT NULL CHECK (events > 0),
	delivered_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (cursor_name, last_start, last_key)
);
CREATE INDEX usage_export_batches_delivered ON civicgate.usage_export_batches USING brin (delivered_at);
