package lda_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/lda"
)

func TestMapsEveryField(t *testing.T) {
	ctx := context.Background()
	pool := migratedtest.Pool(t)
	body, err := os.ReadFile("testdata/filings.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := lda.Decode(body, 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.LobbyingDisclosures, Src: lda.SourceName, Items: p.Items}, mirror.Options{})
	if err != nil || st.Created != 3 {
		t.Fatalf("%+v %v", st, err)
	}
	var got string
	if err := pool.QueryRow(ctx, `SELECT concat_ws('|', filing_type, filing_type_display, filing_year, filing_period, registrant_id,
		registrant_name, client_id, client_name, client_description, income, coalesce(expenses::text, '-'),
		to_char(posted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), coalesce(termination_date::text, '-'),
		array_to_string(issue_areas, ','), array_to_string(lobbyist_names, ','), array_to_string(agencies_acted_on, ','),
		activities::text, document_url, source_url)
		FROM lobbying_disclosures WHERE id = '0a1b2c3d-0000-4000-8000-000000000001'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	want := `Q2|2nd Quarter - Report|2026|Q2|400001|SYNTHETIC ADVOCATES LLC|900001|EXAMPLE HEALTH COALITION|Health care advocacy|30000.00|-|` +
		`2026-07-18 14:15:30.123456|-|HCR,TAX|Jane Q. Roe,John Doe Jr.|SENATE,HOUSE OF REPRESENTATIVES,Treasury, Dept of|` +
		`[{"lobbyists": [{"name": "Jane Q. Roe", "is_new": true, "lobbyist_id": "5001", "covered_position": "Legislative Assistant, Sen. Example"}, ` +
		`{"name": "John Doe Jr.", "is_new": false, "lobbyist_id": "5002", "covered_position": null}], "issue_area": "HCR", "description": "Synthetic issues relating to drug pricing.", ` +
		`"issue_area_name": "Health Issues", "agencies_acted_on": ["SENATE", "HOUSE OF REPRESENTATIVES"]}, {"lobbyists": [{"name": "Jane Q. Roe", "is_new": false, ` +
		`"lobbyist_id": "5001", "covered_position": null}], "issue_area": "TAX", "description": "Synthetic tax credit.", "issue_area_name": "Taxation/Internal Revenue Code", ` +
		`"agencies_acted_on": ["Treasury, Dept of", "SENATE"]}]|https://lda.senate.gov/filings/public/filing/0a1b2c3d-0000-4000-8000-000000000001/print/|` +
		`https://lda.senate.gov/api/v1/filings/0a1b2c3d-0000-4000-8000-000000000001/`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	var period, expenses, term string
	if err := pool.QueryRow(ctx, `SELECT filing_period, expenses::text, termination_date::text FROM lobbying_disclosures WHERE filing_type = '2A'`).Scan(&period, &expenses, &term); err != nil {
		t.Fatal(err)
	}
	if period != "AMENDMENT" || expenses != "1250.50" || term != "2026-06-30" {
		t.Fatalf("2A: %s %s %s", period, expenses, term)
	}
	if err := pool.QueryRow(ctx, `SELECT filing_period FROM lobbying_disclosures WHERE filing_type = 'RR'`).Scan(&period); err != nil || period != "Q1" {
		t.Fatalf("RR period %q %v", period, err)
	}
}

func TestPeriods(t *testing.T) {
	q := func(s string) *string { return &s }
	cases := []struct {
		typ    string
		period *string
		want   string
	}{{"Q1", q("first_quarter"), "Q1"}, {"3A", q("third_quarter"), "AMENDMENT"}, {"4@", q("fourth_quarter"), "AMENDMENT"},
		{"RA", nil, "AMENDMENT"}, {"2T", q("second_quarter"), "Q2"}, {"MM", q("mid_year"), "Q2"}, {"YY", q("year_end"), "Q4"}, {"Q4Y", q("fourth_quarter"), "Q4"}}
	for _, c := range cases {
		got, err := lda.Period(c.typ, c.period, nil)
		if err != nil || got != c.want {
			t.Errorf("Period(%s) = %q %v, want %s", c.typ, got, err, c.want)
		}
	}
	if _, err := lda.Period("Q1", q("thirteenth_quarter"), nil); err == nil || !strings.Contains(err.Error(), "thirteenth") {
		t.Errorf("unknown period accepted: %v", err)
	}
}
