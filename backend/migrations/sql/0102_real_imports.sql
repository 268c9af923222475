-- 0102 (docs/design.md D29, D32): what real upstream files need, and one case rule for every string filter.
--
-- federal_budget_lines: an OMB budget edition is kept per line (edition = budget year of the release, e.g.
-- 2016 for the FY2016 President's Budget), with `estimate` (the column is an estimate in that edition, not
-- an actual) and `transition_quarter` (the TQ column: July–September 1976, fiscal_year 1976). MTS rows whose
-- month amount is "null" but whose fiscal-year-to-date amount is a number are lines, so `amount` may be null.
ALTER TABLE federal_budget_lines
    ADD COLUMN IF NOT EXISTS edition integer,
    ADD COLUMN IF NOT EXISTS estimate boolean,
    ADD COLUMN IF NOT EXISTS transition_quarter boolean NOT NULL DEFAULT false;
ALTER TABLE federal_budget_lines ALTER COLUMN amount DROP NOT NULL;
CREATE INDEX IF NOT EXISTS budget_edition_idx ON federal_budget_lines (dataset, edition, fiscal_year DESC, sort_month DESC, id DESC) WHERE deleted_at IS NULL;

-- member_terms: one row per party a member held in a Congress and chamber (party_affiliations of a term:
-- a mid-term switch gives two rows for that Congress), ordered by seq.
ALTER TABLE member_terms ADD COLUMN IF NOT EXISTS seq integer NOT NULL DEFAULT 0;
ALTER TABLE member_terms DROP CONSTRAINT IF EXISTS member_terms_pkey;
ALTER TABLE member_terms ADD PRIMARY KEY (member_id, congress, chamber, seq);

-- Codes contained in lists compare case-insensitively (docs/design.md D4, D32): index the lower-cased arrays.
CREATE INDEX IF NOT EXISTS regulatory_rins_lower_idx ON regulatory_filings USING gin (civic_lower_array(rins)) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_dockets_lower_idx ON regulatory_filings USING gin (civic_lower_array(docket_ids)) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_issue_areas_lower_idx ON lobbying_disclosures USING gin (civic_lower_array(issue_areas)) WHERE deleted_at IS NULL;
DROP INDEX IF EXISTS regulatory_rins_idx;
DROP INDEX IF EXISTS regulatory_dockets_idx;
DROP INDEX IF EXISTS lobbying_issue_areas_idx;
