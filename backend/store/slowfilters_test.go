package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/internal/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// slowFiltersFixture loads rows made for the edge cases of the ordered filter plans (migration 0105): members
// with several terms in one Congress (both chambers, a party switch), duplicate names, deleted members; agency
// names differing in case and punctuation, with LIKE metacharacters, NULL elements (regulatory), duplicates in one record,
// no agencies at all, more names matching one substring than the per-name plan reads; ties on every sort key.
const slowFiltersFixture = `
INSERT INTO members (member_id, bioguide_id, name, state, deleted_at)
SELECT 'M' || lpad(g::text, 4, '0'), 'M' || lpad(g::text, 4, '0'),
       (ARRAY['Adams, John', 'adams, john', 'Baker, Ann', 'Zeta, Zoe', 'Ó Briain, Dara', 'Young, Al'])[1 + g % 6] || CASE WHEN g % 4 = 0 THEN '' ELSE ' ' || (g % 9) END,
       (ARRAY['WA', 'VT', 'NY'])[1 + g % 3], CASE WHEN g % 37 = 0 THEN now() END
FROM generate_series(1, 400) g;
INSERT INTO member_terms (member_id, congress, chamber, party, seq)
SELECT 'M' || lpad(g::text, 4, '0'), 110 + g % 5, 'house', 'Democrat', 0 FROM generate_series(1, 400) g
UNION ALL SELECT 'M' || lpad(g::text, 4, '0'), 110 + g % 5, 'senate', 'Democrat', 0 FROM generate_series(1, 400) g WHERE g % 3 = 0
UNION ALL SELECT 'M' || lpad(g::text, 4, '0'), 110 + g % 5, 'house', 'Republican', 1 FROM generate_series(1, 400) g WHERE g % 7 = 0
UNION ALL SELECT 'M' || lpad(g::text, 4, '0'), 111 + g % 5, 'senate', 'Independent', 0 FROM generate_series(1, 400) g WHERE g % 4 = 0;

CREATE TEMP TABLE agency_vocab AS SELECT * FROM unnest(ARRAY[
    'Federal Aviation Administration', 'FEDERAL AVIATION ADMINISTRATION', 'Aviation Safety (FAA) Board',
    'Environmental Protection Agency', 'Agency for 100% Things', 'Under_score Office', 'Office of the Secretary',
    'Bureau 1', 'Bureau 2', 'Bureau 3', 'Bureau 4', 'Bureau 5', 'Bureau 6', 'Bureau 7', 'Bureau 8', 'Bureau 9',
    'Bureau 10', 'Bureau 11', 'Bureau 12', 'Bureau 13', 'Bureau 14', 'Bureau 15', 'Bureau 16', 'Bureau 17',
    'Bureau 18', 'Bureau 19', 'Bureau 20', NULL]) WITH ORDINALITY AS v(name, i);

INSERT INTO regulatory_filings (id, document_number, type, title, agency_names, publication_date, filing_year, filing_period, deleted_at)
SELECT 'R' || lpad(g::text, 4, '0'), 'R' || g, (ARRAY['RULE', 'NOTICE'])[1 + g % 2], 't',
       CASE WHEN g % 13 = 0 THEN '{}'::text[] ELSE ARRAY(SELECT name FROM agency_vocab WHERE i IN (1 + g % 28, 1 + (g * 7) % 28, 1 + g % 28)) END,
       DATE '2020-01-01' + g % 90, 2020, 'Q1', CASE WHEN g % 29 = 0 THEN now() END
FROM generate_series(1, 600) g;

INSERT INTO federal_budget_lines (id, dataset, fiscal_year, congress, month, agency_name, account_title, amount, deleted_at)
SELECT 'B' || lpad(g::text, 5, '0'), (ARRAY['APPROPRIATIONS', 'OUTLAYS'])[1 + g % 2], 2000 + g % 10, 106 + g % 5,
       CASE WHEN g % 2 = 1 THEN (2000 + g % 10)::text || '-' || lpad((1 + g % 12)::text, 2, '0') END,
       (ARRAY['Department of Defense--Military Programs', 'DEFENSE Nuclear Facilities Safety Board', 'Department of State',
              'Dept_of 100% Things'])[1 + g % 4] || CASE WHEN g % 3 = 0 THEN ' ' || (g % 20) ELSE '' END,
       'x', 1, CASE WHEN g % 31 = 0 THEN now() END
FROM generate_series(1, 600) g;

INSERT INTO lobbying_disclosures (id, filing_type, filing_year, filing_period, registrant_id, registrant_name, client_id, client_name,
       posted_at, agencies_acted_on, deleted_at)
SELECT 'L' || lpad(g::text, 4, '0'), 'Q1', 2020, 'Q1', 'r' || g % 5, 'R', 'c' || g % 7, 'C',
       CASE WHEN g % 11 = 0 THEN NULL ELSE TIMESTAMPTZ '2020-01-01 00:00:00Z' + (g % 50) * interval '1 day' END,
       CASE g % 5 WHEN 0 THEN ARRAY['SENATE', 'Senate'] WHEN 1 THEN ARRAY['House of Representatives']
                  WHEN 2 THEN ARRAY['Environmental Protection Agency (EPA)'] WHEN 3 THEN ARRAY['environmental protection agency (epa)', 'SENATE', 'senate']
                  ELSE '{}'::text[] END,
       CASE WHEN g % 23 = 0 THEN now() END
FROM generate_series(1, 600) g;
`

// slowFiltersMutations writes the shapes the mirror writes (backend/mirror/records.go, stage.go, delete.go):
// upserts that rename, re-date and re-list agencies, the delete-and-reinsert of a member's terms, soft deletes
// and undeletes, a many-row INSERT … SELECT … ON CONFLICT, and a hard delete.
const slowFiltersMutations = `
INSERT INTO members (member_id, bioguide_id, name, state) VALUES ('M0005', 'M0005', 'Aaron, First', 'WA')
    ON CONFLICT (member_id) DO UPDATE SET name = EXCLUDED.name, state = EXCLUDED.state;
DELETE FROM member_terms WHERE member_id = 'M0005';
INSERT INTO member_terms (member_id, congress, chamber, party, seq) VALUES ('M0005', 112, 'house', 'Democrat', 0), ('M0005', 112, 'senate', 'Democrat', 0);
UPDATE members SET name = 'Zzz, Renamed' WHERE member_id = 'M0012';
UPDATE members SET deleted_at = now() WHERE member_id = 'M0015';
UPDATE members SET deleted_at = NULL WHERE member_id = 'M0037';

INSERT INTO regulatory_filings (id, document_number, type, title, agency_names, publication_date, filing_year, filing_period)
SELECT 'R' || lpad(g::text, 4, '0'), 'R' || g, 'RULE', 't', ARRAY['Brand New Aviation Office', 'Office of the Secretary'],
       DATE '2021-06-01' + g % 3, 2021, 'Q2'
FROM generate_series(1, 600, 17) g
ON CONFLICT (id) DO UPDATE SET agency_names = EXCLUDED.agency_names, publication_date = EXCLUDED.publication_date, type = EXCLUDED.type;
UPDATE regulatory_filings SET deleted_at = now() WHERE id IN ('R0002', 'R0003', 'R0010');
UPDATE regulatory_filings SET deleted_at = NULL WHERE id = 'R0029';
DELETE FROM regulatory_filings WHERE id IN ('R0004', 'R0005');

INSERT INTO federal_budget_lines (id, dataset, fiscal_year, congress, agency_name, account_title, amount)
VALUES ('B00002', 'APPROPRIATIONS', 2011, 112, 'Defense, Brand-New Agency', 'x', 1)
    ON CONFLICT (id) DO UPDATE SET agency_name = EXCLUDED.agency_name, fiscal_year = EXCLUDED.fiscal_year;
UPDATE federal_budget_lines SET deleted_at = now() WHERE id IN ('B00004', 'B00008');

UPDATE lobbying_disclosures SET posted_at = TIMESTAMPTZ '2025-01-01 00:00:00Z' WHERE id IN ('L0011', 'L0003');
UPDATE lobbying_disclosures SET agencies_acted_on = ARRAY['SeNaTe'] WHERE id = 'L0002';
UPDATE lobbying_disclosures SET deleted_at = now() WHERE id IN ('L0005', 'L0010');
DELETE FROM lobbying_disclosures WHERE id = 'L0020';
`

func newSlowFiltersStore(t *testing.T, tracer pgx.QueryTracer) (*Store, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	ConfigurePool(cfg)
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrations.Apply(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, slowFiltersFixture); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	codec, _ := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	return New(pool, codec), pool
}

// walkIDs collects every page of one filter with the given limit.
func walkIDs(t *testing.T, name string, limit int, page func(limit int, cur *string) ([]string, *string, error)) []string {
	t.Helper()
	var all []string
	var cur *string
	for i := 0; ; i++ {
		ids, next, err := page(limit, cur)
		if err != nil {
			t.Fatalf("%s: page %d: %v", name, i, err)
		}
		all = append(all, ids...)
		if next == nil {
			return all
		}
		if i > 1000 {
			t.Fatalf("%s: cursor does not end", name)
		}
		cur = next
	}
}

func referenceIDs(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("reference %s: %v", sql, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("reference %s: %v", sql, err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids
}

// TestSlowFiltersMatchTheirReference checks that each of the four filters with an ordered plan (migration 0105)
// returns exactly the rows, in exactly the order, of the plain query it replaced, across every page, before and
// after mirror-shaped writes change the denormalised keys.
func TestSlowFiltersMatchTheirReference(t *testing.T) {
	s, pool := newSlowFiltersStore(t, nil)
	ctx := context.Background()
	check := func(t *testing.T) {
		nonEmpty := 0
		for _, c := range []int{110, 111, 112, 115, 999} {
			for _, ch := range []string{"", "house", "Senate"} {
				for _, st := range []string{"", "wa"} {
					in := records.MembersInput{Congress: &c}
					ref := "SELECT m.member_id FROM members m WHERE m.deleted_at IS NULL AND EXISTS (SELECT 1 FROM member_terms t WHERE t.member_id = m.member_id AND t.congress = $1 AND ($2 = '' OR t.chamber = lower($2))) AND ($3 = '' OR m.state = upper($3)) ORDER BY m.name, m.member_id"
					if ch != "" {
						in.Chamber = &ch
					}
					if st != "" {
						in.State = &st
					}
					want := referenceIDs(t, pool, ref, c, ch, st)
					nonEmpty += min(len(want), 1)
					for _, limit := range []int{3, 25} {
						name := fmt.Sprintf("members congress=%d chamber=%q state=%q limit=%d", c, ch, st, limit)
						got := walkIDs(t, name, limit, func(limit int, cur *string) ([]string, *string, error) {
							in.Limit, in.Cursor = &limit, cur
							p, err := s.Members(ctx, in)
							ids := make([]string, len(p.Items))
							for i, m := range p.Items {
								ids[i] = m.MemberID
							}
							return ids, p.NextCursor, err
						})
						if !slices.Equal(got, want) {
							t.Errorf("%s:\n got %v\nwant %v", name, got, want)
						}
					}
				}
			}
		}
		for _, sub := range []string{"aviation", "AVIATION", "(faa)", "agency", "100%", "under_", "_", "%", "bureau", "bureau 1", "office", "nowhere", "", "a\nb"} {
			for _, typ := range []string{"", "RULE"} {
				in := records.RegulatoryFilingsInput{AgencyName: &sub}
				if typ != "" {
					in.Type = &typ
				}
				want := referenceIDs(t, pool, "SELECT id FROM regulatory_filings WHERE deleted_at IS NULL AND agency_names_search LIKE lower($1) AND ($2 = '' OR type = $2) ORDER BY publication_date DESC, id DESC", likePattern(sub), typ)
				nonEmpty += min(len(want), 1)
				for _, limit := range []int{3, 25} {
					name := fmt.Sprintf("regulatory agency_name=%q type=%q limit=%d", sub, typ, limit)
					got := walkIDs(t, name, limit, func(limit int, cur *string) ([]string, *string, error) {
						in.Limit, in.Cursor = &limit, cur
						p, err := s.RegulatoryFilings(ctx, in)
						ids := make([]string, len(p.Items))
						for i, f := range p.Items {
							ids[i] = f.ID
						}
						return ids, p.NextCursor, err
					})
					if !slices.Equal(got, want) {
						t.Errorf("%s:\n got %v\nwant %v", name, got, want)
					}
				}
			}
		}
		for _, sub := range []string{"defense", "DEFENSE", "defense--military", "100%", "dept_", "department", "state 1", "nowhere", ""} {
			for _, ds := range []string{records.DatasetAppropriations, records.DatasetOutlays} {
				for _, fy := range []int{0, 2003} {
					in := records.FederalBudgetsInput{Dataset: ds, Agency: &sub}
					if fy != 0 {
						in.FiscalYear = &fy
					}
					want := referenceIDs(t, pool, "SELECT id FROM federal_budget_lines WHERE deleted_at IS NULL AND dataset = $1 AND agency_name ILIKE $2 AND ($3 = 0 OR fiscal_year = $3) ORDER BY fiscal_year DESC, sort_month DESC, id DESC", ds, likePattern(sub), fy)
					nonEmpty += min(len(want), 1)
					for _, limit := range []int{3, 25} {
						name := fmt.Sprintf("budgets %s agency=%q fiscal_year=%d limit=%d", ds, sub, fy, limit)
						got := walkIDs(t, name, limit, func(limit int, cur *string) ([]string, *string, error) {
							in.Limit, in.Cursor = &limit, cur
							p, err := s.FederalBudgets(ctx, in)
							ids := make([]string, len(p.Items))
							for i, l := range p.Items {
								ids[i] = l.ID
							}
							return ids, p.NextCursor, err
						})
						if !slices.Equal(got, want) {
							t.Errorf("%s:\n got %v\nwant %v", name, got, want)
						}
					}
				}
			}
		}
		for _, agency := range []string{"senate", "SENATE", "Environmental Protection Agency (EPA)", "environmental protection agency", "house of representatives", ""} {
			for _, client := range []string{"", "c3"} {
				in := records.LobbyingDisclosuresInput{AgencyActedOn: &agency}
				if client != "" {
					in.ClientID = &client
				}
				want := referenceIDs(t, pool, "SELECT id FROM lobbying_disclosures WHERE deleted_at IS NULL AND civic_lower_array(agencies_acted_on) @> ARRAY[lower($1::text)] AND ($2 = '' OR client_id = $2) ORDER BY sort_posted_at DESC, id DESC", agency, client)
				nonEmpty += min(len(want), 1)
				for _, limit := range []int{3, 25} {
					name := fmt.Sprintf("lobbying agency_acted_on=%q client_id=%q limit=%d", agency, client, limit)
					got := walkIDs(t, name, limit, func(limit int, cur *string) ([]string, *string, error) {
						in.Limit, in.Cursor = &limit, cur
						p, err := s.LobbyingDisclosures(ctx, in)
						ids := make([]string, len(p.Items))
						for i, d := range p.Items {
							ids[i] = d.ID
						}
						return ids, p.NextCursor, err
					})
					if !slices.Equal(got, want) {
						t.Errorf("%s:\n got %v\nwant %v", name, got, want)
					}
				}
			}
		}
		if nonEmpty < 60 {
			t.Errorf("only %d filter cases have rows: the fixture does not exercise the plans", nonEmpty)
		}
	}
	t.Run("seeded", check)
	if _, err := pool.Exec(ctx, slowFiltersMutations); err != nil {
		t.Fatalf("mutations: %v", err)
	}
	t.Run("after mirror-shaped writes", check)
}
