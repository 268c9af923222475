package reliability

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Hostile import files against the real recordsd binary (README.md "Hostile requests"): `recordsd sync`
// with the default flags on malformed CSV, JSON and YAML must exit non-zero with an error that says where
// and what, and lose nothing — what an earlier import wrote (rows and change events) stays exactly as it
// was, and the bad file writes no row and no event.

const goodOMB = "Agency Code,Agency Name,Bureau Code,Bureau Name,Account Code,Account Name,Treasury Agency Code," +
	"Subfunction Code,Subfunction Title,BEA Category,On- or Off- Budget,1976,TQ,1977,2014,2015,2016,2017,2018,2019,2020\r\n" +
	"001,Legislative Branch,00,Legislative Branch,,\"Receipts, Central fiscal operations\",,803,Central fiscal operations,Mandatory,On-budget,-287,-132,-429,0,0,0,0,0,0,0\r\n" +
	"001,Legislative Branch,05,Senate,0000,Senate,00,801,Legislative functions,Discretionary,On-budget,\"126,428\",\"36,115\",\"154,249\",1,2,3,4,5,6,7\r\n"

const ombHeader = "Agency Code,Agency Name,Bureau Code,Bureau Name,Account Code,Account Name,Treasury Agency Code," +
	"Subfunction Code,Subfunction Title,BEA Category,On- or Off- Budget,1976,TQ,1977,2014,2015,2016,2017,2018,2019,2020\r\n"

type hostileImport struct {
	name string
	args []string // sync arguments before --file
	file string   // file name (its extension matters to nobody but the reader)
	body string
	want []string // every one must appear in the output
}

func hostileImports() []hostileImport {
	appr := []string{"federal_budgets", "--source", "appropriations"}
	return []hostileImport{
		{"omb unterminated quote", appr, "budauth.csv",
			ombHeader + "001,Legislative Branch,05,Senate,0000,\"Senate,00,801,Legislative functions,Discretionary,On-budget,1,2,3,4,5,6,7,8,9,10\r\n",
			[]string{"malformed record at line 2", "quote"}},
		{"omb amount not a number", appr, "budauth.csv",
			ombHeader + "001,Legislative Branch,05,Senate,0000,Senate,00,801,Legislative functions,Discretionary,On-budget,1,2,3,4,5,12x,7,8,9,10\r\n",
			[]string{"malformed record at line 2", `fiscal year 2016 amount "12x" is not a number`}},
		{"omb amount overflows", appr, "budauth.csv",
			ombHeader + "001,Legislative Branch,05,Senate,0000,Senate,00,801,Legislative functions,Discretionary,On-budget,1e999,2,3,4,5,6,7,8,9,10\r\n",
			[]string{"malformed record at line 2", `"1e999" is not a number`}},
		{"omb account code with letters", appr, "budauth.csv",
			ombHeader + "001,Legislative Branch,05,Senate,01A0,Senate,00,801,Legislative functions,Discretionary,On-budget,1,2,3,4,5,6,7,8,9,10\r\n",
			[]string{"malformed record at line 2", `account code "01A0" is not a numeric code`}},
		{"omb no budget columns", appr, "budauth.csv", "a,b,c\r\n1,2,3\r\n",
			[]string{`omb: header has no "agency code" column`}},
		{"omb binary garbage", appr, "budauth.csv", "\x00\x01\x02\xff\xfe\r\n\x00",
			[]string{`omb: header has no "agency code" column`}},
		{"omb empty file", appr, "budauth.csv", "", []string{"omb: header: EOF"}},
		{"mts truncated JSON", []string{"federal_budgets", "--source", "outlays"}, "mts.json",
			`{"data":[{"record_date":"2026-06-30","classification_id":"1"`, []string{"mts: not a Fiscal Data page"}},
		{"mts amount not a number", []string{"federal_budgets", "--source", "outlays"}, "mts.json",
			`{"data":[{"record_date":"2026-06-30","classification_id":"1","classification_desc":"X","current_month_net_outly_amt":"1,2x","current_fytd_net_outly_amt":"null","record_fiscal_year":"2026"}],"links":{"next":null}}`,
			[]string{"malformed record at data[0] of page 1", `"12x" is not an amount`}},
		{"legislators not a list", []string{"members"}, "legislators.yaml", "bioguide: X\n",
			[]string{"legislators: the document is not a list of legislators"}},
		{"legislators bad YAML", []string{"members"}, "legislators.yaml", "- id: {bioguide: X\n  name: [\n",
			[]string{"legislators: parse YAML"}},
		{"legislators party_affiliations with a bad date", []string{"members"}, "legislators.yaml",
			"- id: {bioguide: Z000099}\n  name: {first: A, last: B}\n  terms:\n  - {type: rep, start: '2019-01-03', end: '2021-01-03', state: MI, district: 3, party: Independent,\n" +
				"     party_affiliations: [{start: '2019-13-03', end: '2019-07-04', party: Republican}]}\n",
			[]string{"malformed record at line 1 (legislator 0)", "party_affiliations[0]: start"}},
		{"bills file not JSON", []string{"bills"}, "bill_118_hr_1.json", "<html>rate limited</html>",
			[]string{"malformed record at bill_118_hr_1.json", "not a JSON object"}},
		{"bills object of another kind", []string{"bills"}, "bill_118_hr_1.json", `{"member": {"bioguideId": "X"}}`,
			[]string{"malformed record at bill_118_hr_1.json", "neither a bill"}},
	}
}

func TestHostileImportFiles(t *testing.T) {
	bins.Build(t)
	dsn := testenv.Postgres(t)
	ctx := context.Background()
	run := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bins.Recordsd, args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(t, "migrate"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte(goodOMB), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "sync", "federal_budgets", "--source", "appropriations", "--file", good); err != nil ||
		!strings.Contains(out, "done read=20 created=20") || !strings.Contains(out, "malformed=0") {
		t.Fatalf("good file: %v\n%s", err, out)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	state := func() string {
		var s string
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM federal_budget_lines WHERE deleted_at IS NULL) || '/' ||
			(SELECT coalesce(sum(amount), 0) FROM federal_budget_lines) || '/' || (SELECT count(*) FROM members) || '/' ||
			(SELECT count(*) FROM bills) || '/' || (SELECT coalesce(max(id), 0) FROM change_events)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := state()
	for _, h := range hostileImports() {
		t.Run(h.name, func(t *testing.T) {
			sub := t.TempDir()
			path := filepath.Join(sub, h.file)
			if err := os.WriteFile(path, []byte(h.body), 0o600); err != nil {
				t.Fatal(err)
			}
			if h.args[0] == "bills" {
				path = sub // a folder, as users give it
			}
			out, err := run(t, append(append([]string{"sync"}, h.args...), "--file", path)...)
			if err == nil {
				t.Fatalf("exit 0 on a hostile file\n%s", out)
			}
			for _, w := range h.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q\n%s", w, out)
				}
			}
			if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
				t.Fatalf("crashed\n%s", out)
			}
			if got := state(); got != before {
				t.Fatalf("the hostile file changed the database: %s, was %s", got, before)
			}
		})
	}
}
