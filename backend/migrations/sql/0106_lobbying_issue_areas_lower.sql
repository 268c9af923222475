-- 0106: the lobbying issue_area filter reads a stored lower-cased copy of issue_areas (docs/design.md D58).
-- A common issue area walks the lobbying order index and tests rows until a page matches; the test called
-- civic_lower_array per row, a SQL function PostgreSQL cannot inline (unnest, lower, array_agg), and that was
-- 3–7 ms of a page. The stored column makes the test an array comparison, and its GIN index serves rare values
-- as the expression index did.
--
-- civic_lower_array itself gets a cheaper body: lower() of the array's text form read back as text[] lowers every
-- element as before (quotes and backslashes have no case; an unquoted NULL reads back as NULL in any case) and
-- gives the same elements to @> and to the GIN indexes of 0001/0102, so they stay valid. It still cannot be
-- inlined (array I/O is only STABLE) but costs a third less per call. One difference no caller sees: a
-- multi-dimensional array keeps its dimensions instead of being flattened (@> and GIN compare elements).
CREATE OR REPLACE FUNCTION civic_lower_array(text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(lower($1::text)::text[], '{}') $$;

ALTER TABLE lobbying_disclosures
    ADD COLUMN IF NOT EXISTS issue_areas_lower text[] GENERATED ALWAYS AS (civic_lower_array(issue_areas)) STORED;
CREATE INDEX IF NOT EXISTS lobbying_issue_areas_lower_col_idx ON lobbying_disclosures USING gin (issue_areas_lower)
    WHERE deleted_at IS NULL;
DROP INDEX IF EXISTS lobbying_issue_areas_lower_idx;
