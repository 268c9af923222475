-- Quota threshold records (docs/design.md D81): the first time in a window that an organization's (or, counted per
-- key, a key's) request quota or cost budget reaches 80 % and 100 %, written by the gateways' usage flushes. The
-- unique constraint is the whole "once per window" rule, whatever the number of gateways; mailed_at is set by
-- whoever sends the notice (MarkCrossingsMailed). key_id is '' for a quota counted per organization.
CREATE TABLE civicgate.quota_crossings (
	id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	org_id       text NOT NULL,
	key_id       text NOT NULL DEFAULT '',
	policy       text NOT NULL,
	kind         text NOT NULL CHECK (kind IN ('requests','cost')),
	level        smallint NOT NULL CHECK (level IN (80,100)),
	window_start timestamptz NOT NULL,
	window_secs  bigint NOT NULL CHECK (window_secs > 0),
	"limit"      bigint NOT NULL CHECK ("limit" > 0),
	crossed_at   timestamptz NOT NULL,
	mailed_at    timestamptz,
	UNIQUE (org_id, key_id, policy, kind, level, window_start)
);
CREATE INDEX quota_crossings_unmailed ON civicgate.quota_crossings (id) WHERE mailed_at IS NULL;
CREATE INDEX quota_crossings_crossed ON civicgate.quota_crossings USING brin (crossed_at);
