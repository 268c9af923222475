package omb_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/omb"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/backend/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

// importEdition imports a fixture the way `recordsd sync federal_budgets --source appropriations --file`
// does with the default flags (stop on a malformed record), scoped to its edition.
func importEdition(t *testing.T, pool *pgxpool.Pool, path string, opt mirror.Options) mirror.Stats {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	items, ed, err := omb.ParseEdition(f, omb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := mirror.New(pool).Run(context.Background(), &mirror.ItemsSource{Fam: mirror.FederalBudgets,
		Src: omb.SourceName, Items: items, ScopePrefix: omb.Scope(ed)}, opt)
	if err != nil || st.Malformed != 0 {
		t.Fatalf("%s: %+v %v", path, st, err)
	}
	return st
}

func lines(t *testing.T, pool *pgxpool.Pool, where string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT concat_ws('|', edition, fiscal_year,
		CASE WHEN transition_quarter THEN 'TQ' ELSE 'FY' END, CASE WHEN estimate THEN 'est' ELSE 'act' END, congress,
		agency_code, coalesce(account_code, 'null'), account_title, subfunction_code, amount)
		FROM federal_budget_lines WHERE deleted_at IS NULL AND `+where+` ORDER BY edition, account_title, subfunction_code, fiscal_year, transition_quarter`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func same(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRealFileQuirks: a CRLF release with quoted thousands, a TQ column, "Receipts" rows without an account
// code and one account code under two names imports with the default flags, and every cell is served once
// under its own name: receipts with account_code null, the two DOT 8547 accounts apart, TQ as fiscal_year
// 1976 marked transition_quarter, columns from the edition's current year (2015) on marked estimates.
func TestRealFileQuirks(t *testing.T) {
	pool := migratedtest.Pool(t)
	st := importEdition(t, pool, "testdata/budauth-fy2016-quirks.csv", mirror.Options{})
	// 6 rows × 10 columns, minus 3 absent cells of the Labor row.
	if st.Read != 57 || st.Created != 57 {
		t.Fatalf("%+v", st)
	}
	same(t, lines(t, pool, "account_code IS NULL AND fiscal_year = 1976"), []string{
		"2016|1976|FY|act|94|001|null|Receipts, Central fiscal operations|803|-287000.00",
		"2016|1976|TQ|act|94|001|null|Receipts, Central fiscal operations|803|-132000.00",
		"2016|1976|FY|act|94|001|null|Receipts, Central fiscal operations|908|-30000.00",
		"2016|1976|TQ|act|94|001|null|Receipts, Central fiscal operations|908|-17000.00",
	})
	same(t, lines(t, pool, "account_code = '8547' AND fiscal_year IN (2014, 2015)"), []string{
		"2016|2014|FY|act|113|021|8547|Miscellaneous Trust Funds, Maritime Administration|403|2500000.00",
		"2016|2015|FY|est|113|021|8547|Miscellaneous Trust Funds, Maritime Administration|403|3000.00",
		"2016|2014|FY|act|113|021|8547|Special studies, services and projects|403|11000.00",
		"2016|2015|FY|est|113|021|8547|Special studies, services and projects|403|12000.00",
	})
	same(t, lines(t, pool, "account_title = 'Senate' AND fiscal_year IN (1976, 1977, 2020)"), []string{
		"2016|1976|FY|act|94|001|0000|Senate|801|126428000.00",
		"2016|1976|TQ|act|94|001|0000|Senate|801|36115000.00",
		"2016|1977|FY|act|94|001|0000|Senate|801|154249000.00",
		"2016|2020|FY|est|116|001|0000|Senate|801|1006000.00",
	})
	// Empty and "." cells are absent, not zero.
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM federal_budget_lines WHERE account_code = '813110' AND fiscal_year < 2014`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("Labor lines before 2014: %d %v", n, err)
	}
	// Every value once: the served total of FY1976 (TQ apart) is the file's column sum.
	var total float64
	if err := pool.QueryRow(context.Background(), `SELECT sum(amount) FROM federal_budget_lines WHERE fiscal_year = 1976 AND NOT transition_quarter`).Scan(&total); err != nil || total != (-287-30+126428)*1000 {
		t.Fatalf("FY1976 total %v %v", total, err)
	}
	// Re-importing the same file changes nothing.
	if st := importEdition(t, pool, "testdata/budauth-fy2016-quirks.csv", mirror.Options{}); st.Unchanged != 57 || st.Created+st.Updated != 0 {
		t.Fatalf("re-import %+v", st)
	}
}

// TestSecondEditionKeepsBoth: importing the FY2017 release after the FY2016 one (both --full-snapshot) keeps
// the FY2016 lines: each edition is its own set of lines, `edition` picks one, and a full snapshot of one
// edition deletes nothing of another.
func TestSecondEditionKeepsBoth(t *testing.T) {
	ctx := context.Background()
	pool := migratedtest.Pool(t)
	importEdition(t, pool, "testdata/budauth-fy2016-quirks.csv", mirror.Options{FullSnapshot: true})
	st := importEdition(t, pool, "testdata/budauth-fy2017-quirks.csv", mirror.Options{FullSnapshot: true})
	if st.Created != 10 || st.Deleted != 0 {
		t.Fatalf("%+v", st)
	}
	codec, err := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool, codec)
	fy, account := 2016, "senate"
	var got []string
	for _, ed := range []*int{nil, ptr(2016), ptr(2017)} {
		page, err := s.FederalBudgets(ctx, records.FederalBudgetsInput{Dataset: records.DatasetAppropriations,
			FiscalYear: &fy, Account: &account, Edition: ed})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Items {
			got = append(got, l.ID+" "+strings.TrimRight(strings.TrimRight(ftoa(*l.Amount), "0"), "."))
		}
		got = append(got, "--")
	}
	same(t, got, []string{
		"appr-e2017-fy2016-001-05-0000-" + idHash(t, got[0]) + " 1020000", "appr-e2016-fy2016-001-05-0000-" + idHash(t, got[1]) + " 1002000", "--",
		"appr-e2016-fy2016-001-05-0000-" + idHash(t, got[1]) + " 1002000", "--",
		"appr-e2017-fy2016-001-05-0000-" + idHash(t, got[0]) + " 1020000", "--",
	})
	// edition with OUTLAYS is a client mistake, not an empty page.
	if _, err := s.FederalBudgets(ctx, records.FederalBudgetsInput{Dataset: records.DatasetOutlays, Edition: ptr(2016)}); err == nil {
		t.Fatal("edition with OUTLAYS accepted")
	}
}

func ptr(n int) *int { return &n }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// idHash is the last id segment (the hash of the descriptive columns) of "id amount".
func idHash(t *testing.T, s string) string {
	t.Helper()
	id := strings.Fields(s)[0]
	return id[strings.LastIndex(id, "-")+1:]
}

// TestChangedLineIsOneUpdate: re-importing an edition where one cell changed writes that line through the
// staging upsert and one `updated` event naming "amount"; everything else is unchanged and writes nothing.
func TestChangedLineIsOneUpdate(t *testing.T) {
	ctx := context.Background()
	pool := migratedtest.Pool(t)
	importEdition(t, pool, "testdata/budauth-fy2016-quirks.csv", mirror.Options{})
	raw, err := os.ReadFile("testdata/budauth-fy2016-quirks.csv")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(raw), `"2,500"`, `"2,600"`, 1)
	if changed == string(raw) {
		t.Fatal("fixture lacks the cell")
	}
	path := t.TempDir() + "/budauth.csv"
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	st := importEdition(t, pool, path, mirror.Options{})
	if st.Updated != 1 || st.Unchanged != 56 || st.Created != 0 {
		t.Fatalf("%+v", st)
	}
	var amount float64
	var fields []string
	var evType string
	if err := pool.QueryRow(ctx, `SELECT l.amount, e.type, e.changed_fields FROM federal_budget_lines l
		JOIN change_events e ON e.record_id = l.id AND e.id = (SELECT max(id) FROM change_events)
		WHERE l.account_code = '8547' AND l.fiscal_year = 2014 AND l.amount > 100000`).Scan(&amount, &evType, &fields); err != nil {
		t.Fatal(err)
	}
	if amount != 2600000 || evType != "updated" || strings.Join(fields, ",") != "amount" {
		t.Fatalf("amount %v event %s %v", amount, evType, fields)
	}
}
