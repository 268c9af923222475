-- Usage per key, hour and operation (docs/design.md D70), written additively by every gateway in the same
-- batch (WriteFlush) as the minute and hour rows. latency_buckets holds OperationLatencyBuckets counts, added
-- element-wise. No variables or credentials are stored: an operation is named by its document hash.
CREATE TABLE civicgate.usage_operation_hour (
	key_id          text NOT NULL,
	org_id          text NOT NULL,
	start           timestamptz NOT NULL,
	op_hash         text NOT NULL,
	op_type         text NOT NULL,
	op_name         text NOT NULL,
	requests        bigint NOT NULL DEFAULT 0,
	errors          bigint NOT NULL DEFAULT 0,
	cost            bigint NOT NULL DEFAULT 0,
	latency_buckets bigint[] NOT NULL,
	last_seen       timestamptz NOT NULL,
	PRIMARY KEY (key_id, start, op_hash)
);
CREATE INDEX usage_operation_hour_org ON civicgate.usage_operation_hour (org_id, start);
CREATE INDEX usage_operation_hour_start ON civicgate.usage_operation_hour USING brin (start);
-- Each operation once: its normalized text (literal values replaced) and the schema coordinates it reads.
-- Written once per hash; last_seen moved at most hourly; pruned when older than the hour rows' retention.
CREATE TABLE civicgate.operations (
	op_hash    text PRIMARY KEY,
	op_type    text NOT NULL,
	op_name    text NOT NULL,
	normalized text NOT NULL DEFAULT '',
	first_seen timestamptz NOT NULL,
	last_seen  timestamptz NOT NULL
);
CREATE INDEX operations_last_seen ON civicgate.operations (last_seen);
CREATE TABLE civicgate.operation_coordinates (
	op_hash    text NOT NULL REFERENCES civicgate.operations (op_hash) ON DELETE CASCADE,
	coordinate text NOT NULL,
	PRIMARY KEY (op_hash, coordinate)
);
CREATE INDEX operation_coordinates_coordinate ON civicgate.operation_coordinates (coordinate, op_hash);
