package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/records"
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

INSERT INTO regulatory_filings (id, document_number, type, title, rins, docket_ids, agency_names, publication_date, filing_year, filing_period, deleted_at)
SELECT 'R' || lpad(g::text, 4, '0'), 'R' || g, (ARRAY['RULE', 'NOTICE'])[1 + g % 2], 't',
       CASE WHEN g % 5 = 0 THEN ARRAY['2060-AV' || g % 3] ELSE '{}' END, ARRAY['EPA-HQ-' || g % 40, 'faa-' || g % 60],
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
	pool := migratedtest.PoolWith(t, func(cfg *pgxpool.Config) {
		ConfigurePool(cfg)
		cfg.ConnConfig.Tracer = tracer
	})
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
		for _, code := range []string{"2060-av1", "2060-AV2", "nowhere"} {
			for _, docket := range []string{"", "FAA-7"} {
				in := records.RegulatoryFilingsInput{RIN: &code}
				if docket != "" {
					in.DocketID = &docket
				}
				want := referenceIDs(t, pool, "SELECT id FROM regulatory_filings WHERE deleted_at IS NULL AND civic_lower_array(rins) @> ARRAY[lower($1::text)] AND ($2 = '' OR civic_lower_array(docket_ids) @> ARRAY[lower($2::text)]) ORDER BY publication_date DESC, id DESC", code, docket)
				nonEmpty += min(len(want), 1)
				for _, limit := range []int{3, 25} {
					name := fmt.Sprintf("regulatory rIN=%q docket_id=%q limit=%d", code, docket, limit)
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

// lastQuery records the SQL and arguments of the queries the store sends, so a test can EXPLAIN them.
type lastQuery struct {
	mu   sync.Mutex
	sql  []string
	args [][]any
}

func (l *lastQuery) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql, l.args = append(l.sql, data.SQL), append(l.args, data.Args)
	return ctx
}

func (l *lastQuery) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// first returns the first query recorded since the last call and forgets them all.
func (l *lastQuery) first() (string, []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sql, args := l.sql[0], l.args[0]
	l.sql, l.args = nil, nil
	return sql, args
}

// TestSlowFilterPlansReadOnePage EXPLAINs the SQL the store sends for the four filters on a database where, as at
// the 1m scale, each filter matches a small share of its family (a Congress ≈1% of the terms; one agency name a
// few % of the filings, lines and disclosures): with the planner's own choice (no enable_* settings), the page
// must come from the ordered index of migration 0105, first page and deep page alike.
func TestSlowFilterPlansReadOnePage(t *testing.T) {
	tracer := &lastQuery{}
	s, pool := newSlowFiltersStore(t, tracer)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
INSERT INTO members (member_id, bioguide_id, name, state)
SELECT 'X' || g, 'X' || g, 'Name ' || md5(g::text), 'WA' FROM generate_series(1, 30000) g;
INSERT INTO member_terms (member_id, congress, chamber, seq)
SELECT 'X' || g, 1 + (g + k * 7) % 119, (ARRAY['house', 'senate'])[1 + k % 2], 0 FROM generate_series(1, 30000) g, generate_series(0, 2) k;
INSERT INTO regulatory_filings (id, document_number, type, title, agency_names, publication_date, filing_year, filing_period)
SELECT 'X' || g, 'X' || g, 'NOTICE', 't', ARRAY['Agency number ' || g % 40], DATE '2000-01-01' + g % 5000, 2000, 'Q1' FROM generate_series(1, 40000) g;
INSERT INTO federal_budget_lines (id, dataset, fiscal_year, congress, agency_name, account_title, amount)
SELECT 'X' || g, 'APPROPRIATIONS', 1980 + g % 45, 100, 'Agency number ' || g % 40, 'x', 1 FROM generate_series(1, 40000) g;
INSERT INTO lobbying_disclosures (id, filing_type, filing_year, filing_period, registrant_id, registrant_name, client_id, client_name, posted_at, agencies_acted_on)
SELECT 'X' || g, 'Q1', 2020, 'Q1', 'r', 'R', 'c', 'C', TIMESTAMPTZ '2000-01-01Z' + g * interval '1 hour', ARRAY['Agency number ' || g % 40]
FROM generate_series(1, 40000) g;`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) members, member_terms, regulatory_filings, regulatory_agency_name_rows,
		regulatory_agency_names, federal_budget_lines, budget_agency_names, lobbying_disclosures, lobbying_agency_rows`); err != nil {
		t.Fatal(err)
	}
	c118, senate, agency := 118, "senate", "agency number 7"
	deep := func(page func(cur *string) (*string, error)) *string {
		var cur *string
		for i := 0; i < 4; i++ {
			next, err := page(cur)
			if err != nil || next == nil {
				t.Fatalf("walk: %v %v", err, next)
			}
			cur = next
		}
		return cur
	}
	type run struct {
		name, index string
		call        func(cur *string) (*string, error)
	}
	runs := []run{
		{"members congress", "member_terms_congress_name_idx", func(cur *string) (*string, error) {
			p, err := s.Members(ctx, records.MembersInput{Congress: &c118, Cursor: cur})
			return p.NextCursor, err
		}},
		{"members congress+chamber", "member_terms_congress_chamber_name_idx", func(cur *string) (*string, error) {
			p, err := s.Members(ctx, records.MembersInput{Congress: &c118, Chamber: &senate, Cursor: cur})
			return p.NextCursor, err
		}},
		{"budgets agency", "budget_agency_idx", func(cur *string) (*string, error) {
			p, err := s.FederalBudgets(ctx, records.FederalBudgetsInput{Dataset: records.DatasetAppropriations, Agency: &agency, Cursor: cur})
			return p.NextCursor, err
		}},
		{"regulatory agency_name", "regulatory_agency_name_rows_pkey", func(cur *string) (*string, error) {
			p, err := s.RegulatoryFilings(ctx, records.RegulatoryFilingsInput{AgencyName: &agency, Cursor: cur})
			return p.NextCursor, err
		}},
		{"lobbying agency_acted_on", "lobbying_agency_rows_pkey", func(cur *string) (*string, error) {
			p, err := s.LobbyingDisclosures(ctx, records.LobbyingDisclosuresInput{AgencyActedOn: &agency, Cursor: cur})
			return p.NextCursor, err
		}},
	}
	for _, r := range runs {
		for _, depth := range []string{"first page", "deep page"} {
			var cur *string
			if depth == "deep page" {
				cur = deep(r.call)
			}
			tracer.first() // forget the walk
			if _, err := r.call(cur); err != nil {
				t.Fatalf("%s %s: %v", r.name, depth, err)
			}
			sql, args := tracer.first()
			var plan []map[string]any
			if err := pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
				t.Fatalf("%s %s: explain: %v", r.name, depth, err)
			}
			b, _ := json.Marshal(plan)
			text := string(b)
			if !strings.Contains(text, `"Index Name":"`+r.index+`"`) {
				t.Errorf("%s %s: plan does not walk %s: %s", r.name, depth, r.index, text)
			}
			// Only the few-row name vocabularies are read whole.
			walkPlan(plan[0]["Plan"].(map[string]any), func(node map[string]any) {
				scan, _ := node["Node Type"].(string)
				rel, _ := node["Relation Name"].(string)
				if (scan == "Seq Scan" || scan == "Bitmap Heap Scan") && rel != "budget_agency_names" && rel != "regulatory_agency_names" {
					t.Errorf("%s %s: %s on %s: %s", r.name, depth, scan, rel, text)
				}
			})
			// O(page): no plan node returns more than the names matched times (limit+1) rows.
			if n := maxActualRows(plan[0]["Plan"].(map[string]any)); n > 26 {
				t.Errorf("%s %s: a plan node returned %v rows for a page of 25: %s", r.name, depth, n, text)
			}
		}
	}
}

// walkPlan calls fn on every node of an EXPLAIN (FORMAT JSON) plan.
func walkPlan(node map[string]any, fn func(map[string]any)) {
	fn(node)
	if kids, ok := node["Plans"].([]any); ok {
		for _, k := range kids {
			walkPlan(k.(map[string]any), fn)
		}
	}
}

// maxActualRows is the largest "Actual Rows" × "Actual Loops" of any node of an EXPLAIN (ANALYZE, FORMAT JSON) plan.
func maxActualRows(node map[string]any) float64 {
	n := node["Actual Rows"].(float64) * node["Actual Loops"].(float64)
	if kids, ok := node["Plans"].([]any); ok {
		for _, k := range kids {
			n = max(n, maxActualRows(k.(map[string]any)))
		}
	}
	return n
}
