package seed

import (
	"context"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

var tiny = Scale{Name: "tiny", Bills: 400, Regulatory: 300, BudgetLines: 300, Lobbying: 300}

func open(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func seeded(t *testing.T, sc Scale, seed uint64) *pgxpool.Pool {
	t.Helper()
	pool := open(t)
	if _, err := Run(context.Background(), pool, Options{Scale: sc, Seed: seed}); err != nil {
		t.Fatalf("seed: %v", err)
	}
	return pool
}

var allTables = []string{"bills", "members", "member_terms", "regulatory_filings", "federal_budget_lines", "lobbying_disclosures"}

// contentHash is an order-independent digest of every column of every row of each record table.
func contentHash(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tbl := range allTables {
		var h string
		if err := pool.QueryRow(context.Background(),
			"SELECT coalesce(md5(string_agg(x::text, E'\\n' ORDER BY x::text)), '') FROM "+tbl+" x").Scan(&h); err != nil {
			t.Fatal(err)
		}
		out[tbl] = h
	}
	return out
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestSameSeedSameContent(t *testing.T) {
	a := contentHash(t, seeded(t, tiny, 7))
	b := contentHash(t, seeded(t, tiny, 7))
	c := contentHash(t, seeded(t, tiny, 8))
	for _, tbl := range allTables {
		if a[tbl] == "" {
			t.Errorf("%s: empty", tbl)
		}
		if a[tbl] != b[tbl] {
			t.Errorf("%s: same seed, different content: %s vs %s", tbl, a[tbl], b[tbl])
		}
	}
	for _, tbl := range []string{"bills", "members", "regulatory_filings", "federal_budget_lines", "lobbying_disclosures"} {
		if a[tbl] == c[tbl] {
			t.Errorf("%s: seeds 7 and 8 produced identical content", tbl)
		}
	}
}

func TestRerunSkipsAndResetReloads(t *testing.T) {
	pool := seeded(t, tiny, 3)
	before := contentHash(t, pool)
	res, err := Run(context.Background(), pool, Options{Scale: tiny, Seed: 3})
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if len(res.Skipped) != 5 || len(res.Rows) != 0 {
		t.Errorf("second run: skipped %v, loaded %v; want all 5 families skipped", res.Skipped, res.Rows)
	}
	if after := contentHash(t, pool); after["bills"] != before["bills"] || after["members"] != before["members"] {
		t.Error("re-running seed changed the data")
	}
	// One emptied family is refilled; the others are left alone.
	if _, err := pool.Exec(context.Background(), "TRUNCATE regulatory_filings"); err != nil {
		t.Fatal(err)
	}
	res, err = Run(context.Background(), pool, Options{Scale: tiny, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows["regulatory_filings"] != int64(tiny.Regulatory) || len(res.Skipped) != 4 {
		t.Errorf("refill: rows %v skipped %v", res.Rows, res.Skipped)
	}
	if got := contentHash(t, pool); got["regulatory_filings"] != before["regulatory_filings"] {
		t.Error("refilled family differs from the first load")
	}
	res, err = Run(context.Background(), pool, Options{Scale: tiny, Seed: 3, Reset: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 || res.Rows["bills"] != int64(tiny.Bills) {
		t.Errorf("reset: rows %v skipped %v", res.Rows, res.Skipped)
	}
	if got := contentHash(t, pool); got["bills"] != before["bills"] || got["lobbying_disclosures"] != before["lobbying_disclosures"] {
		t.Error("reset reload differs from the first load")
	}
}

// TestSmallScale loads the demo scale and checks the interface's non-null and format rules on every row and
// that every filter of docs/api.md "Root fields and filters" selects some rows but not all.
func TestSmallScale(t *testing.T) {
	pool := seeded(t, Scales["small"], 1)
	sc := Scales["small"]
	wantRows := map[string]int64{"bills": int64(sc.Bills), "regulatory_filings": int64(sc.Regulatory),
		"federal_budget_lines": int64(2 * sc.BudgetLines), "lobbying_disclosures": int64(sc.Lobbying)}
	for tbl, n := range wantRows {
		if got := count(t, pool, "SELECT count(*) FROM "+tbl); got != n {
			t.Errorf("%s: %d rows, want %d", tbl, got, n)
		}
	}
	// The benchmark's rare term must stay rare: only rareTopics (≈1 in 30,000 titles) mention it.
	for _, tp := range topics {
		if strings.Contains(tp, "lighthouse") {
			t.Errorf("topic %q makes the rare benchmark term common", tp)
		}
	}
	if got := count(t, pool, `SELECT count(DISTINCT m.member_id) FROM members m JOIN member_terms t USING (member_id) WHERE t.congress = 119`); got < 530 || got > 560 {
		t.Errorf("members serving in the 119th Congress: %d, want about 541", got)
	}

	t.Run("format", func(t *testing.T) {
		// Each query counts rows violating a rule; every count must be zero.
		violations := map[string]string{
			"bill id is {type}{number}-{congress}":      `SELECT count(*) FROM bills WHERE id <> type || number || '-' || congress`,
			"bill type is a real lowercase type":        `SELECT count(*) FROM bills WHERE type NOT IN ('hr','s','hjres','sjres','hconres','sconres','hres','sres')`,
			"bill congress 93..119":                     `SELECT count(*) FROM bills WHERE congress NOT BETWEEN 93 AND 119`,
			"bill introduced within its Congress":       `SELECT count(*) FROM bills WHERE introduced_date IS NOT NULL AND (introduced_date < make_date(1787+2*congress,1,3) OR introduced_date >= make_date(1789+2*congress,1,3) OR introduced_date > '2026-11-20')`,
			"bill sponsor key is {bioguide}:{congress}": `SELECT count(*) FROM bills WHERE member_bioguide_id IS NOT NULL AND member_by_congress_key <> member_bioguide_id || ':' || congress`,
			"bill sponsor served in that Congress and chamber": `SELECT count(*) FROM bills b WHERE member_bioguide_id IS NOT NULL AND NOT EXISTS (
				SELECT 1 FROM member_terms t WHERE t.member_id = b.member_bioguide_id AND t.congress = b.congress
				AND t.chamber = CASE WHEN b.type LIKE 'h%' THEN 'house' ELSE 'senate' END)`,
			"bill source url":                      `SELECT count(*) FROM bills WHERE source_url NOT LIKE 'https://www.congress.gov/bill/%-congress/%/' || number`,
			"bill numbers are 1..n per type":       `SELECT count(*) FROM (SELECT congress, type, max(number) - count(*) AS gap FROM bills GROUP BY 1,2) g WHERE gap <> 0`,
			"bioguide id format":                   `SELECT count(*) FROM members WHERE member_id !~ '^[A-Z][0-9]{6}$' OR bioguide_id <> member_id`,
			"member state is a real code":          `SELECT count(*) FROM members WHERE state !~ '^(A[KLRSZ]|C[AOT]|D[CE]|FL|G[AU]|HI|I[ADLN]|K[SY]|LA|M[ADEINOPST]|N[CDEHJMVY]|O[HKR]|P[AR]|RI|S[CD]|T[NX]|UT|V[AIT]|W[AIVY])$'`,
			"member has terms":                     `SELECT count(*) FROM members m WHERE NOT EXISTS (SELECT 1 FROM member_terms t WHERE t.member_id = m.member_id)`,
			"senate terms have no district":        `SELECT count(*) FROM member_terms WHERE chamber = 'senate' AND district IS NOT NULL`,
			"house seats filled once per Congress": `SELECT count(*) FROM (SELECT congress, state, district FROM member_terms WHERE chamber='house' AND congress >= 93 GROUP BY 1,2,3 HAVING count(*) > 1) d`,
			"regulatory id is the document number": `SELECT count(*) FROM regulatory_filings WHERE id <> document_number OR id !~ '^(C1-)?[0-9]{4}-[0-9]{5}$'`,
			"regulatory year/period from publication": `SELECT count(*) FROM regulatory_filings WHERE filing_year <> extract(year FROM publication_date)
				OR (correction_of IS NULL AND filing_period <> 'Q' || extract(quarter FROM publication_date))
				OR (correction_of IS NOT NULL AND filing_period <> 'AMENDMENT')`,
			"regulatory first agency listed":       `SELECT count(*) FROM regulatory_filings WHERE agency_id <> agency_ids[1] OR agency_name <> agency_names[1] OR jsonb_array_length(agencies) <> cardinality(agency_ids)`,
			"rin format":                           `SELECT count(*) FROM regulatory_filings, unnest(rins) r WHERE r !~ '^[0-9]{4}-A[A-Z][0-9A-Z]{2}$'`,
			"docket ids normalised":                `SELECT count(*) FROM regulatory_filings, unnest(docket_ids) d WHERE d LIKE 'Docket%'`,
			"citation volume":                      `SELECT count(*) FROM regulatory_filings WHERE citation NOT LIKE (filing_year - 1935) || ' FR %'`,
			"presidential documents have subtype":  `SELECT count(*) FROM regulatory_filings WHERE (type = 'PRESIDENTIAL_DOCUMENT') <> (subtype IS NOT NULL)`,
			"month only for OUTLAYS":               `SELECT count(*) FROM federal_budget_lines WHERE (dataset = 'OUTLAYS') <> (month IS NOT NULL) OR (dataset = 'OUTLAYS') <> (record_date IS NOT NULL) OR (dataset = 'OUTLAYS') <> (fiscal_year_to_date_amount IS NOT NULL)`,
			"bureau only for APPROPRIATIONS":       `SELECT count(*) FROM federal_budget_lines WHERE (dataset = 'APPROPRIATIONS') <> (bureau_code IS NOT NULL) OR (dataset = 'APPROPRIATIONS') <> (bureau_name IS NOT NULL)`,
			"OMB code formats":                     `SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS' AND (agency_code !~ '^[0-9]{3}$' OR bureau_code !~ '^[0-9]{2}$' OR account_code !~ '^[0-9]{4}$' OR subfunction_code !~ '^[0-9]{3}$')`,
			"appropriations in whole thousands":    `SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS' AND amount % 1000 <> 0`,
			"budget congress from fiscal year":     `SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS' AND congress <> (fiscal_year - 1788) / 2`,
			"outlay month in its fiscal year":      `SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS' AND (fiscal_year <> extract(year FROM record_date) + CASE WHEN extract(month FROM record_date) >= 10 THEN 1 ELSE 0 END OR to_char(record_date, 'YYYY-MM') <> month)`,
			"fytd is the running sum":              `SELECT count(*) FROM (SELECT fiscal_year_to_date_amount, sum(amount) OVER (PARTITION BY split_part(id, '-', 4), fiscal_year ORDER BY month) AS s FROM federal_budget_lines WHERE dataset = 'OUTLAYS') x WHERE s <> fiscal_year_to_date_amount`,
			"lobbying id is a UUID":                `SELECT count(*) FROM lobbying_disclosures WHERE id !~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'`,
			"lobbying amendments":                  `SELECT count(*) FROM lobbying_disclosures WHERE (filing_type ~ '[A@]') <> (filing_period = 'AMENDMENT')`,
			"lobbying issue codes are LDA codes":   `SELECT count(*) FROM lobbying_disclosures, unnest(issue_areas) c WHERE c NOT IN ('ACC','ADV','AER','AGR','ALC','ANI','APP','ART','AUT','AVI','BAN','BNK','BEV','BUD','CIV','CHM','CAW','CDT','COM','CPI','CON','CSP','CPT','DEF','DIS','DOC','ECN','EDU','ENG','ENV','FAM','FIN','FIR','FOO','FOR','FUE','GAM','GOV','HCR','HOM','HOU','IMM','IND','INS','INT','LBR','LAW','MAN','MAR','MIA','MED','MMM','MON','NAT','PHA','POS','RRR','RES','REL','RET','ROD','SCI','SMB','SPO','TAR','TAX','TEC','TOB','TOR','TRD','TRA','TOU','TRU','URB','UNM','UTI','VET','WAS','WEL')`,
			"lobbying activities match arrays":     `SELECT count(*) FROM lobbying_disclosures WHERE jsonb_array_length(activities) > 0 AND issue_areas[1] <> activities->0->>'issue_area'`,
			"lobbying posted in or after its year": `SELECT count(*) FROM lobbying_disclosures WHERE posted_at IS NOT NULL AND (extract(year FROM posted_at) NOT BETWEEN filing_year AND filing_year + 1 OR posted_at > '2026-11-20T06:00:00Z')`,
			"synced before the reference time":     `SELECT count(*) FROM bills WHERE last_synced_at > '2026-11-20T06:00:00Z' OR last_synced_at < '2026-11-19T06:00:00Z'`,
		}
		for rule, sql := range violations {
			if n := count(t, pool, sql); n != 0 {
				t.Errorf("%s: %d rows violate it", rule, n)
			}
		}
	})

	t.Run("every filter selects some but not all", func(t *testing.T) {
		// The SQL mirrors each filter's semantics (docs/design.md D4, docs/api.md "Root fields and filters"), with a value a client would use.
		filters := []struct{ name, total, match string }{
			{"bills congress", "SELECT count(*) FROM bills", "SELECT count(*) FROM bills WHERE congress = 118"},
			{"bills type", "SELECT count(*) FROM bills", "SELECT count(*) FROM bills WHERE type = 'hjres'"},
			{"bills q", "SELECT count(*) FROM bills", "SELECT count(*) FROM bills WHERE search @@ websearch_to_tsquery('english', 'veterans')"},
			{"members state", "SELECT count(*) FROM members", "SELECT count(*) FROM members WHERE state = 'VT'"},
			{"members chamber", "SELECT count(*) FROM members", "SELECT count(*) FROM members m WHERE EXISTS (SELECT 1 FROM member_terms t WHERE t.member_id = m.member_id AND t.chamber = 'senate')"},
			{"members congress", "SELECT count(*) FROM members", "SELECT count(*) FROM members m WHERE EXISTS (SELECT 1 FROM member_terms t WHERE t.member_id = m.member_id AND t.congress = 100)"},
			{"regulatory agency_id", "SELECT count(*) FROM regulatory_filings", "SELECT count(*) FROM regulatory_filings WHERE agency_ids @> ARRAY['145']"},
			{"regulatory agency_name", "SELECT count(*) FROM regulatory_filings", "SELECT count(*) FROM regulatory_filings WHERE agency_names_search LIKE '%aviation%'"},
			{"regulatory type", "SELECT count(*) FROM regulatory_filings", "SELECT count(*) FROM regulatory_filings WHERE type = 'PRESIDENTIAL_DOCUMENT'"},
			{"regulatory filing_year", "SELECT count(*) FROM regulatory_filings", "SELECT count(*) FROM regulatory_filings WHERE filing_year = 2024"},
			{"regulatory filing_period", "SELECT count(*) FROM regulatory_filings", "SELECT count(*) FROM regulatory_filings WHERE filing_period = 'AMENDMENT'"},
			{"regulatory rIN", "SELECT count(*) FROM regulatory_filings", "SELECT count(*) FROM regulatory_filings WHERE rins @> ARRAY[(SELECT rins[1] FROM regulatory_filings WHERE cardinality(rins) > 0 ORDER BY id LIMIT 1)]"},
			{"regulatory docket_id", "SELECT count(*) FROM regulatory_filings", "SELECT count(*) FROM regulatory_filings WHERE docket_ids @> ARRAY[(SELECT docket_ids[1] FROM regulatory_filings WHERE cardinality(docket_ids) > 0 ORDER BY id LIMIT 1)]"},
			{"budgets dataset", "SELECT count(*) FROM federal_budget_lines", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS'"},
			{"budgets congress", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS'", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS' AND congress = 118"},
			{"budgets fiscal_year", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS'", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS' AND fiscal_year = 2025"},
			{"budgets month", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS'", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS' AND month = '2025-06'"},
			{"budgets agency", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS'", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS' AND agency_name ILIKE '%defense%'"},
			{"budgets bureau_code", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS'", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'APPROPRIATIONS' AND bureau_code = '05'"},
			{"budgets account", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS'", "SELECT count(*) FROM federal_budget_lines WHERE dataset = 'OUTLAYS' AND account_title ILIKE '%salaries%'"},
			{"lobbying registrant_name", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE registrant_name ILIKE '%llp%'"},
			{"lobbying registrant_id", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE registrant_id = (SELECT min(registrant_id) FROM lobbying_disclosures)"},
			{"lobbying client_name", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE client_name ILIKE '%university%'"},
			{"lobbying client_id", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE client_id = (SELECT min(client_id) FROM lobbying_disclosures)"},
			{"lobbying lobbyist_name", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE lobbyist_names_search LIKE '%smith%'"},
			{"lobbying filing_year", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE filing_year = 2024"},
			{"lobbying filing_period", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE filing_period = 'AMENDMENT'"},
			{"lobbying issue_area", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE issue_areas @> ARRAY['HCR']"},
			{"lobbying agency_acted_on", "SELECT count(*) FROM lobbying_disclosures", "SELECT count(*) FROM lobbying_disclosures WHERE civic_lower_array(agencies_acted_on) @> ARRAY[lower('Environmental Protection Agency (EPA)')]"},
		}
		for _, f := range filters {
			total, match := count(t, pool, f.total), count(t, pool, f.match)
			if match == 0 || match >= total {
				t.Errorf("%s: matches %d of %d rows; want some but not all", f.name, match, total)
			}
		}
	})
}

func TestRosterIsDeterministicAndRealistic(t *testing.T) {
	a, b := buildRoster(5, 0), buildRoster(5, 0)
	if len(a.members) != len(b.members) {
		t.Fatalf("roster sizes differ: %d vs %d", len(a.members), len(b.members))
	}
	for c := firstCongress; c <= lastCongress; c++ {
		if h, s := len(a.serving[c]["house"]), len(a.serving[c]["senate"]); h != 441 || s != 100 {
			t.Errorf("Congress %d: %d House seats (incl. 6 delegates), %d senators; want 441 and 100", c, h, s)
		}
	}
	big := buildRoster(5, 1000)
	if len(big.members) != len(a.members)+1000 {
		t.Errorf("extra members: %d, want %d", len(big.members), len(a.members)+1000)
	}
}

func TestFamiliesSubsetAndScopedReset(t *testing.T) {
	pool := seeded(t, tiny, 4)
	before := contentHash(t, pool)
	res, err := Run(context.Background(), pool, Options{Scale: tiny, Seed: 4, Reset: true, Families: []string{FamilyBills}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows["bills"] != int64(tiny.Bills) {
		t.Errorf("bills-only reset loaded %v", res.Rows)
	}
	after := contentHash(t, pool)
	for _, tbl := range allTables {
		if after[tbl] != before[tbl] {
			t.Errorf("%s changed after a bills-only reset", tbl)
		}
	}
	if _, err := Run(context.Background(), pool, Options{Scale: tiny, Families: []string{"nope"}}); err == nil {
		t.Error("unknown family accepted")
	}
}
