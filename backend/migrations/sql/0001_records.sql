-- 0001: the five record families (DESIGN §3.1), their filters (§3.2) and keyset orders (§3.3).
-- Every record table has last_synced_at and a nullable deleted_at; every query excludes deleted rows, so
-- every index is partial on deleted_at IS NULL.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Immutable helpers so array columns can feed generated columns and expression indexes
-- (array_to_string is only STABLE).
CREATE OR REPLACE FUNCTION civic_join_lower(text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(string_agg(lower(x), chr(10)), '') FROM unnest($1) AS x $$;
CREATE OR REPLACE FUNCTION civic_lower_array(text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(array_agg(lower(x)), '{}') FROM unnest($1) AS x $$;

-- Bills ---------------------------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS bills (
    id                      text PRIMARY KEY,              -- {type}{number}-{congress}, e.g. hr2882-118
    congress                integer NOT NULL,
    type                    text NOT NULL,                 -- lowercase: hr s hjres sjres hconres sconres hres sres
    number                  integer NOT NULL,
    official_title          text NOT NULL,
    introduced_date         date,
    member_name             text,
    member_bioguide_id      text,
    member_by_congress_key  text,                          -- {bioguide_id}:{congress}
    committee_names         text NOT NULL DEFAULT '',
    source_url              text,
    last_synced_at          timestamptz NOT NULL DEFAULT now(),
    deleted_at              timestamptz,
    -- NULL introduced dates sort last in "newest first": the keyset uses this non-null key.
    sort_date               date GENERATED ALWAYS AS (coalesce(introduced_date, '-infinity'::date)) STORED,
    search                  tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', official_title), 'A') ||
        to_tsvector('english', coalesce(member_name, '')) ||
        to_tsvector('english', committee_names) ||
        -- bill-number forms: "hr2882" (the query side folds "H.R. 2882" / "HR 2882" into it), plus the bare number
        to_tsvector('simple', type || number::text || ' ' || number::text)
    ) STORED,
    UNIQUE (congress, type, number)
);
CREATE INDEX IF NOT EXISTS bills_order_idx ON bills (sort_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS bills_congress_idx ON bills (congress, sort_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS bills_type_idx ON bills (type, sort_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS bills_congress_type_idx ON bills (congress, type, sort_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS bills_search_idx ON bills USING gin (search) WHERE deleted_at IS NULL;

-- Members -------------------------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS members (
    member_id       text PRIMARY KEY,                      -- = bioguide_id
    bioguide_id     text NOT NULL UNIQUE,
    name            text NOT NULL,
    state           text,                                  -- two-letter code of the latest term
    last_synced_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at      timestamptz
);
CREATE INDEX IF NOT EXISTS members_order_idx ON members (name, member_id) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS members_state_idx ON members (state, name, member_id) WHERE deleted_at IS NULL;

CREATE TABLE IF NOT EXISTS member_terms (
    member_id   text NOT NULL REFERENCES members (member_id) ON DELETE CASCADE,
    congress    integer NOT NULL,
    chamber     text NOT NULL CHECK (chamber IN ('house', 'senate')),
    party       text,
    state       text,
    district    integer,
    PRIMARY KEY (member_id, congress, chamber)
);
CREATE INDEX IF NOT EXISTS member_terms_congress_idx ON member_terms (congress, chamber, member_id);
CREATE INDEX IF NOT EXISTS member_terms_chamber_idx ON member_terms (chamber, member_id);

-- Regulatory filings (Federal Register documents) ---------------------------------------------------
CREATE TABLE IF NOT EXISTS regulatory_filings (
    id                  text PRIMARY KEY,                  -- document number, e.g. 2026-02822
    document_number     text NOT NULL,
    type                text NOT NULL CHECK (type IN ('RULE', 'PROPOSED_RULE', 'NOTICE', 'PRESIDENTIAL_DOCUMENT')),
    subtype             text,
    title               text NOT NULL,
    abstract            text,
    action              text,
    agency_id           text,                              -- first listed agency
    agency_name         text,                              -- first listed agency
    agencies            jsonb NOT NULL DEFAULT '[]',       -- [{"agency_id","name","slug","parent_agency_id"}]
    agency_ids          text[] NOT NULL DEFAULT '{}',      -- every listed agency id (filter agency_id)
    agency_names        text[] NOT NULL DEFAULT '{}',      -- every listed agency name (filter agency_name)
    publication_date    date NOT NULL,
    filing_year         integer NOT NULL,
    filing_period       text NOT NULL CHECK (filing_period IN ('Q1', 'Q2', 'Q3', 'Q4', 'AMENDMENT')),
    correction_of       text,
    effective_on        date,
    comments_close_on   date,
    rins                text[] NOT NULL DEFAULT '{}',
    docket_ids          text[] NOT NULL DEFAULT '{}',
    citation            text,
    significant         boolean,
    html_url            text,
    pdf_url             text,
    source_url          text,
    last_synced_at      timestamptz NOT NULL DEFAULT now(),
    deleted_at          timestamptz,
    agency_names_search text GENERATED ALWAYS AS (civic_join_lower(agency_names)) STORED
);
CREATE INDEX IF NOT EXISTS regulatory_order_idx ON regulatory_filings (publication_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_type_idx ON regulatory_filings (type, publication_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_year_idx ON regulatory_filings (filing_year, publication_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_period_idx ON regulatory_filings (filing_period, publication_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_year_period_idx ON regulatory_filings (filing_year, filing_period, publication_date DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_agency_ids_idx ON regulatory_filings USING gin (agency_ids) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_agency_names_trgm_idx ON regulatory_filings USING gin (agency_names_search gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_rins_idx ON regulatory_filings USING gin (rins) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS regulatory_dockets_idx ON regulatory_filings USING gin (docket_ids) WHERE deleted_at IS NULL;

-- Federal budget lines (APPROPRIATIONS: OMB budget authority; OUTLAYS: Monthly Treasury Statement) -------
CREATE TABLE IF NOT EXISTS federal_budget_lines (
    id                          text PRIMARY KEY,
    dataset                     text NOT NULL CHECK (dataset IN ('APPROPRIATIONS', 'OUTLAYS')),
    fiscal_year                 integer NOT NULL,
    congress                    integer NOT NULL,
    month                       text CHECK (month ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),   -- YYYY-MM, OUTLAYS only
    record_date                 date,                                                -- OUTLAYS only
    agency_code                 text,
    agency_name                 text NOT NULL,
    bureau_code                 text,
    bureau_name                 text,                                                -- APPROPRIATIONS only
    account_code                text,
    account_title               text NOT NULL,
    subfunction_code            text,
    subfunction_title           text,
    bea_category                text,
    on_off_budget               text,
    amount                      numeric(20, 2) NOT NULL,                             -- US dollars
    fiscal_year_to_date_amount  numeric(20, 2),                                      -- OUTLAYS only
    source_url                  text,
    last_synced_at              timestamptz NOT NULL DEFAULT now(),
    deleted_at                  timestamptz,
    sort_month                  text GENERATED ALWAYS AS (coalesce(month, '')) STORED
);
CREATE INDEX IF NOT EXISTS budget_order_idx ON federal_budget_lines (dataset, fiscal_year DESC, sort_month DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS budget_congress_idx ON federal_budget_lines (dataset, congress, fiscal_year DESC, sort_month DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS budget_month_idx ON federal_budget_lines (dataset, month, fiscal_year DESC, sort_month DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS budget_bureau_idx ON federal_budget_lines (dataset, bureau_code, fiscal_year DESC, sort_month DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS budget_agency_trgm_idx ON federal_budget_lines USING gin (agency_name gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS budget_account_trgm_idx ON federal_budget_lines USING gin (account_title gin_trgm_ops) WHERE deleted_at IS NULL;

-- Lobbying disclosures (LD-1 / LD-2 filings) --------------------------------------------------------
CREATE TABLE IF NOT EXISTS lobbying_disclosures (
    id                   text PRIMARY KEY,                 -- filing UUID
    filing_type          text NOT NULL,                    -- LDA code: RR, Q1, 1A, 2T, ...
    filing_type_display  text,
    filing_year          integer NOT NULL,
    filing_period        text NOT NULL CHECK (filing_period IN ('Q1', 'Q2', 'Q3', 'Q4', 'AMENDMENT')),
    registrant_id        text NOT NULL,
    registrant_name      text NOT NULL,
    client_id            text NOT NULL,
    client_name          text NOT NULL,
    client_description   text,
    income               numeric(20, 2),
    expenses             numeric(20, 2),
    posted_at            timestamptz,
    termination_date     date,
    issue_areas          text[] NOT NULL DEFAULT '{}',     -- LDA general issue codes (HCR, TAX, ...)
    lobbyist_names       text[] NOT NULL DEFAULT '{}',
    agencies_acted_on    text[] NOT NULL DEFAULT '{}',
    activities           jsonb NOT NULL DEFAULT '[]',      -- [{"issue_area","issue_area_name","description","agencies_acted_on":[…],"lobbyists":[{"lobbyist_id","name","covered_position","is_new"}]}]
    document_url         text,
    source_url           text,
    last_synced_at       timestamptz NOT NULL DEFAULT now(),
    deleted_at           timestamptz,
    sort_posted_at       timestamptz GENERATED ALWAYS AS (coalesce(posted_at, '-infinity'::timestamptz)) STORED,
    lobbyist_names_search text GENERATED ALWAYS AS (civic_join_lower(lobbyist_names)) STORED
);
CREATE INDEX IF NOT EXISTS lobbying_order_idx ON lobbying_disclosures (sort_posted_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_registrant_id_idx ON lobbying_disclosures (registrant_id, sort_posted_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_client_id_idx ON lobbying_disclosures (client_id, sort_posted_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_year_idx ON lobbying_disclosures (filing_year, sort_posted_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_period_idx ON lobbying_disclosures (filing_period, sort_posted_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_year_period_idx ON lobbying_disclosures (filing_year, filing_period, sort_posted_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_registrant_trgm_idx ON lobbying_disclosures USING gin (registrant_name gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_client_trgm_idx ON lobbying_disclosures USING gin (client_name gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_lobbyist_trgm_idx ON lobbying_disclosures USING gin (lobbyist_names_search gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_issue_areas_idx ON lobbying_disclosures USING gin (issue_areas) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS lobbying_agencies_idx ON lobbying_disclosures USING gin (civic_lower_array(agencies_acted_on)) WHERE deleted_at IS NULL;
