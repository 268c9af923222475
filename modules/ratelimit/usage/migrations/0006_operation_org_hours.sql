-- Usage per organization, hour and operation: usage_operation_hour summed over the organization's keys, written in
-- the same batch (WriteFlush), so the questions of a whole organization (FieldsOf without a key, Unused) read one
-- row per operation and hour instead of one per key (docs/design.md D78). Filled from the rows already there.
CREATE TABLE civicgate.usage_operation_org_hour (
	org_id    text NOT NULL,
	start     timestamptz NOT NULL,
	op_hash   text NOT NULL,
	requests  bigint NOT NULL DEFAULT 0,
	errors    bigint NOT NULL DEFAULT 0,
	cost      bigint NOT NULL DEFAULT 0,
	last_seen timestamptz NOT NULL,
	PRIMARY KEY (org_id, start, op_hash)
);
CREATE INDEX usage_operation_org_hour_op ON civicgate.usage_operation_org_hour (op_hash, start);
CREATE INDEX usage_operation_org_hour_start ON civicgate.usage_operation_org_hour USING brin (start);
INSERT INTO civicgate.usage_operation_org_hour (org_id, start, op_hash, requests, errors, cost, last_seen)
SELECT org_id, start, op_hash, sum(requests), sum(errors), sum(cost), max(last_seen)
FROM civicgate.usage_operation_hour GROUP BY org_id, start, op_hash;
