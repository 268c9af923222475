-- 0105: ordered plans for the four slow filters (docs/design.md "ordered plans for the slow filters").
-- Each filter gets an index it can walk in its family's keyset order, so a page reads O(page) rows instead of
-- walking the order index and discarding rows that do not match. Everything denormalised here is kept by
-- triggers, so every write path (seed COPY, mirror upserts and deletes, hand-written SQL) keeps it correct.

-- members congress=… [chamber=…] ---------------------------------------------------------------------------
-- member_terms carries its member's name (the sort key), so "terms of Congress X in name order" is one index
-- range. A BEFORE trigger fills it from members (FOR SHARE: a concurrent rename is waited for and re-read), and
-- a rename of a member rewrites its terms.
ALTER TABLE member_terms ADD COLUMN IF NOT EXISTS name text;
UPDATE member_terms t SET name = m.name FROM members m WHERE m.member_id = t.member_id AND t.name IS DISTINCT FROM m.name;

CREATE OR REPLACE FUNCTION civic_member_terms_fill_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT m.name INTO NEW.name FROM members m WHERE m.member_id = NEW.member_id FOR SHARE;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS member_terms_fill_name ON member_terms;
CREATE TRIGGER member_terms_fill_name BEFORE INSERT OR UPDATE OF member_id, name ON member_terms
    FOR EACH ROW EXECUTE FUNCTION civic_member_terms_fill_name();

CREATE OR REPLACE FUNCTION civic_members_rename_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE member_terms SET name = NEW.name WHERE member_id = NEW.member_id AND name IS DISTINCT FROM NEW.name;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS members_rename_terms ON members;
CREATE TRIGGER members_rename_terms AFTER UPDATE OF name ON members
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION civic_members_rename_terms();

CREATE INDEX IF NOT EXISTS member_terms_congress_name_idx ON member_terms (congress, name, member_id);
CREATE INDEX IF NOT EXISTS member_terms_congress_chamber_name_idx ON member_terms (congress, chamber, name, member_id);
-- (congress, chamber, member_id) is a prefix-equal of the index above for every query that used it.
DROP INDEX IF EXISTS member_terms_congress_idx;

-- federalBudgets agency=… (substring) -------------------------------------------------------------------------
-- The substring is resolved against the small vocabulary of agency names first; each matching name is then an
-- ordered range of budget_agency_idx. The vocabulary is a superset (names are added on write, never removed):
-- a stale name costs one empty index probe, never a wrong row.
CREATE INDEX IF NOT EXISTS budget_agency_idx ON federal_budget_lines (dataset, agency_name, fiscal_year DESC, sort_month DESC, id DESC)
    WHERE deleted_at IS NULL;
CREATE TABLE IF NOT EXISTS budget_agency_names (
    dataset     text NOT NULL,
    agency_name text NOT NULL,
    PRIMARY KEY (dataset, agency_name)
);
INSERT INTO budget_agency_names SELECT DISTINCT dataset, agency_name FROM federal_budget_lines ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION civic_budget_agency_names_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- In key order: concurrent writers (the seed's parallel COPY streams, the mirror) then take the vocabulary's
    -- unique-index locks in one order and cannot deadlock on names both add.
    INSERT INTO budget_agency_names SELECT DISTINCT dataset, agency_name FROM new_rows ORDER BY 1, 2 ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION civic_budget_agency_names_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE budget_agency_names;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS budget_agency_names_insert ON federal_budget_lines;
CREATE TRIGGER budget_agency_names_insert AFTER INSERT ON federal_budget_lines
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_budget_agency_names_add();
DROP TRIGGER IF EXISTS budget_agency_names_update ON federal_budget_lines;
CREATE TRIGGER budget_agency_names_update AFTER UPDATE ON federal_budget_lines
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_budget_agency_names_add();
DROP TRIGGER IF EXISTS budget_agency_names_truncate ON federal_budget_lines;
CREATE TRIGGER budget_agency_names_truncate AFTER TRUNCATE ON federal_budget_lines
    FOR EACH STATEMENT EXECUTE FUNCTION civic_budget_agency_names_truncate();

-- regulatoryFilings agency_name=… (substring of any listed name) ---------------------------------------------
-- One row per (lower-cased listed agency name, live filing), ordered like the family; a vocabulary of the
-- lower-cased names (superset, as above) resolves the substring. Column names differ from regulatory_filings'
-- so the family's unqualified filter SQL stays unambiguous in a join with it.
CREATE TABLE IF NOT EXISTS regulatory_agency_name_rows (
    agency     text NOT NULL,                -- lower(agency name)
    pub_date   date NOT NULL,                -- regulatory_filings.publication_date
    filing_id  text NOT NULL,                -- regulatory_filings.id
    PRIMARY KEY (agency, pub_date, filing_id)
);
CREATE TABLE IF NOT EXISTS regulatory_agency_names (agency text PRIMARY KEY);

CREATE OR REPLACE FUNCTION civic_regulatory_agency_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO regulatory_agency_name_rows
            SELECT DISTINCT lower(a), n.publication_date, n.id FROM new_rows n, unnest(n.agency_names) a
            WHERE n.deleted_at IS NULL AND a IS NOT NULL ON CONFLICT DO NOTHING;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM regulatory_agency_name_rows r USING old_rows o, unnest(o.agency_names) a
            WHERE r.agency = lower(a) AND r.pub_date = o.publication_date AND r.filing_id = o.id;
    ELSE -- UPDATE: only the difference, so an upsert that changes nothing here writes nothing
        DELETE FROM regulatory_agency_name_rows r USING (
            SELECT lower(a) AS agency, o.publication_date, o.id FROM old_rows o, unnest(o.agency_names) a WHERE o.deleted_at IS NULL
            EXCEPT
            SELECT lower(a), n.publication_date, n.id FROM new_rows n, unnest(n.agency_names) a WHERE n.deleted_at IS NULL) d
            WHERE r.agency = d.agency AND r.pub_date = d.publication_date AND r.filing_id = d.id;
        INSERT INTO regulatory_agency_name_rows
            SELECT lower(a), n.publication_date, n.id FROM new_rows n, unnest(n.agency_names) a WHERE n.deleted_at IS NULL AND a IS NOT NULL
            EXCEPT
            SELECT lower(a), o.publication_date, o.id FROM old_rows o, unnest(o.agency_names) a WHERE o.deleted_at IS NULL
            ON CONFLICT DO NOTHING;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        -- In key order, so concurrent writers cannot deadlock on names both add (as budget_agency_names).
        INSERT INTO regulatory_agency_names SELECT DISTINCT lower(a) FROM new_rows n, unnest(n.agency_names) a
            WHERE a IS NOT NULL ORDER BY 1 ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION civic_regulatory_agency_rows_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE regulatory_agency_name_rows, regulatory_agency_names;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS regulatory_agency_rows_insert ON regulatory_filings;
CREATE TRIGGER regulatory_agency_rows_insert AFTER INSERT ON regulatory_filings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_regulatory_agency_rows();
DROP TRIGGER IF EXISTS regulatory_agency_rows_update ON regulatory_filings;
CREATE TRIGGER regulatory_agency_rows_update AFTER UPDATE ON regulatory_filings
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_regulatory_agency_rows();
DROP TRIGGER IF EXISTS regulatory_agency_rows_delete ON regulatory_filings;
CREATE TRIGGER regulatory_agency_rows_delete AFTER DELETE ON regulatory_filings
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_regulatory_agency_rows();
DROP TRIGGER IF EXISTS regulatory_agency_rows_truncate ON regulatory_filings;
CREATE TRIGGER regulatory_agency_rows_truncate AFTER TRUNCATE ON regulatory_filings
    FOR EACH STATEMENT EXECUTE FUNCTION civic_regulatory_agency_rows_truncate();

INSERT INTO regulatory_agency_name_rows
    SELECT DISTINCT lower(a), f.publication_date, f.id FROM regulatory_filings f, unnest(f.agency_names) a
    WHERE f.deleted_at IS NULL AND a IS NOT NULL ON CONFLICT DO NOTHING;
INSERT INTO regulatory_agency_names SELECT DISTINCT lower(a) FROM regulatory_filings f, unnest(f.agency_names) a
    WHERE a IS NOT NULL ON CONFLICT DO NOTHING;

-- lobbyingDisclosures agency_acted_on=… (a whole name, any case) ------------------------------------------------
-- One row per (lower-cased agency acted on, live disclosure), ordered like the family: the filter is one range.
CREATE TABLE IF NOT EXISTS lobbying_agency_rows (
    agency         text NOT NULL,            -- lower(agency acted on)
    posted         timestamptz NOT NULL,     -- lobbying_disclosures.sort_posted_at
    disclosure_id  text NOT NULL,            -- lobbying_disclosures.id
    PRIMARY KEY (agency, posted, disclosure_id)
);

CREATE OR REPLACE FUNCTION civic_lobbying_agency_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO lobbying_agency_rows
            SELECT DISTINCT lower(a), n.sort_posted_at, n.id FROM new_rows n, unnest(n.agencies_acted_on) a
            WHERE n.deleted_at IS NULL AND a IS NOT NULL ON CONFLICT DO NOTHING;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM lobbying_agency_rows r USING old_rows o, unnest(o.agencies_acted_on) a
            WHERE r.agency = lower(a) AND r.posted = o.sort_posted_at AND r.disclosure_id = o.id;
    ELSE
        DELETE FROM lobbying_agency_rows r USING (
            SELECT lower(a) AS agency, o.sort_posted_at, o.id FROM old_rows o, unnest(o.agencies_acted_on) a WHERE o.deleted_at IS NULL
            EXCEPT
            SELECT lower(a), n.sort_posted_at, n.id FROM new_rows n, unnest(n.agencies_acted_on) a WHERE n.deleted_at IS NULL) d
            WHERE r.agency = d.agency AND r.posted = d.sort_posted_at AND r.disclosure_id = d.id;
        INSERT INTO lobbying_agency_rows
            SELECT lower(a), n.sort_posted_at, n.id FROM new_rows n, unnest(n.agencies_acted_on) a WHERE n.deleted_at IS NULL AND a IS NOT NULL
            EXCEPT
            SELECT lower(a), o.sort_posted_at, o.id FROM old_rows o, unnest(o.agencies_acted_on) a WHERE o.deleted_at IS NULL
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION civic_lobbying_agency_rows_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE lobbying_agency_rows;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS lobbying_agency_rows_insert ON lobbying_disclosures;
CREATE TRIGGER lobbying_agency_rows_insert AFTER INSERT ON lobbying_disclosures
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_lobbying_agency_rows();
DROP TRIGGER IF EXISTS lobbying_agency_rows_update ON lobbying_disclosures;
CREATE TRIGGER lobbying_agency_rows_update AFTER UPDATE ON lobbying_disclosures
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_lobbying_agency_rows();
DROP TRIGGER IF EXISTS lobbying_agency_rows_delete ON lobbying_disclosures;
CREATE TRIGGER lobbying_agency_rows_delete AFTER DELETE ON lobbying_disclosures
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION civic_lobbying_agency_rows();
DROP TRIGGER IF EXISTS lobbying_agency_rows_truncate ON lobbying_disclosures;
CREATE TRIGGER lobbying_agency_rows_truncate AFTER TRUNCATE ON lobbying_disclosures
    FOR EACH STATEMENT EXECUTE FUNCTION civic_lobbying_agency_rows_truncate();

INSERT INTO lobbying_agency_rows
    SELECT DISTINCT lower(a), d.sort_posted_at, d.id FROM lobbying_disclosures d, unnest(d.agencies_acted_on) a
    WHERE d.deleted_at IS NULL AND a IS NOT NULL ON CONFLICT DO NOTHING;
-- The filter no longer reads the GIN index of lower-cased agencies: one index less to keep per write.
DROP INDEX IF EXISTS lobbying_agencies_idx;

-- Statistics for the new tables and column now, not at the next autovacuum: the filters' plans depend on them.
ANALYZE member_terms, budget_agency_names, regulatory_agency_name_rows, regulatory_agency_names, lobbying_agency_rows;
