-- What an organization's operations page shows, answered without its keys' rows (docs/design.md D83): the
-- organization's sums per hour and operation (0006) carry the operation's type, name and latency buckets too, and
-- usage_operation_keys keeps, per organization, operation and key, the last hour the key ran the operation, so
-- "how many keys ran it since" reads one row per key and operation instead of one per key, operation and hour.
-- Numbered 0008: 0007 is left to the usage package's other migration of the same day. Filled from the rows there.
ALTER TABLE civicgate.usage_operation_org_hour
	ADD COLUMN op_type text NOT NULL DEFAULT '',
	ADD COLUMN op_name text NOT NULL DEFAULT '',
	ADD COLUMN latency_buckets bigint[] NOT NULL DEFAULT '{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}';
UPDATE civicgate.usage_operation_org_hour o SET op_type = k.op_type, op_name = k.op_name, latency_buckets = k.buckets
FROM (SELECT org_id, start, op_hash, min(op_type) AS op_type, min(op_name) AS op_name,
		ARRAY[coalesce(sum(latency_buckets[1]), 0)::bigint, coalesce(sum(latency_buckets[2]), 0)::bigint, coalesce(sum(latency_buckets[3]), 0)::bigint, coalesce(sum(latency_buckets[4]), 0)::bigint, coalesce(sum(latency_buckets[5]), 0)::bigint, coalesce(sum(latency_buckets[6]), 0)::bigint, coalesce(sum(latency_buckets[7]), 0)::bigint, coalesce(sum(latency_buckets[8]), 0)::bigint, coalesce(sum(latency_buckets[9]), 0)::bigint, coalesce(sum(latency_buckets[10]), 0)::bigint, coalesce(sum(latency_buckets[11]), 0)::bigint, coalesce(sum(latency_buckets[12]), 0)::bigint, coalesce(sum(latency_buckets[13]), 0)::bigint, coalesce(sum(latency_buckets[14]), 0)::bigint, coalesce(sum(latency_buckets[15]), 0)::bigint, coalesce(sum(latency_buckets[16]), 0)::bigint] AS buckets
	FROM civicgate.usage_operation_hour GROUP BY org_id, start, op_hash) k
WHERE o.org_id = k.org_id AND o.start = k.start AND o.op_hash = k.op_hash;
CREATE TABLE civicgate.usage_operation_keys (
	org_id     text NOT NULL,
	op_hash    text NOT NULL,
	key_id     text NOT NULL,
	last_start timestamptz NOT NULL,
	PRIMARY KEY (org_id, op_hash, key_id)
);
CREATE INDEX usage_operation_keys_last ON civicgate.usage_operation_keys (org_id, last_start);
INSERT INTO civicgate.usage_operation_keys (org_id, op_hash, key_id, last_start)
SELECT org_id, op_hash, key_id, max(start) FROM civicgate.usage_operation_hour GROUP BY org_id, op_hash, key_id;
