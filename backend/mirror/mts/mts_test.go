package mts_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/mts"
)

func TestMapsEveryField(t *testing.T) {
	ctx := context.Background()
	pool := migratedtest.Pool(t)
	body, err := os.ReadFile("testdata/mts_table_5.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := mts.NewDecoder().Decode(body, 1)
	if err != nil || p.More {
		t.Fatal(err, p.More)
	}
	// The heading and the Total row are not lines.
	st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.FederalBudgets, Src: mts.SourceName, Items: p.Items}, mirror.Options{})
	if err != nil || st.Created != 2 || st.Read != 2 {
		t.Fatalf("%+v %v", st, err)
	}
	rows, err := pool.Query(ctx, `SELECT concat_ws('|', id, dataset, fiscal_year, congress, month, record_date, coalesce(agency_code, '-'), agency_name,
		coalesce(bureau_code, '-'), coalesce(bureau_name, '-'), coalesce(account_code, '-'), account_title, amount,
		coalesce(fiscal_year_to_date_amount::text, '-'), source_url) FROM federal_budget_lines ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	src := "https://api.fiscaldata.treasury.gov/services/api/fiscal_service/v1/accounting/mts/mts_table_5?filter=record_date:eq:2026-06-30"
	want := []string{
		"outlays-2026-06-30-10002|OUTLAYS|2026|119|2026-06|2026-06-30|-|Department of Justice|-|-|-|Federal Bureau of Investigation|1012345678.91|8123456789.12|" + src,
		"outlays-2026-06-30-10010|OUTLAYS|2026|119|2026-06|2026-06-30|-|Legislative Branch|-|-|-|Legislative Branch|-5.00|-|" + src,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestMalformedRow(t *testing.T) {
	p, err := mts.NewDecoder().Decode([]byte(`{"data":[{"record_date":"2026-06-30","classification_id":"1","classification_desc":"X",
		"current_month_net_outly_amt":"12,3x","record_fiscal_year":"2026"}],"links":{"next":null}}`), 4)
	if err != nil || len(p.Items) != 1 || p.Items[0].Err == nil || p.Items[0].Pos != "data[0] of page 4" {
		t.Fatalf("%+v %v", p.Items, err)
	}
}

// TestNullMonthKeepsFiscalYearToDate: MTS publishes some rows with the month amount as the string "null" and
// a fiscal-year-to-date number; the row is a line with amount null and its FYTD kept, in its own Congress.
func TestNullMonthKeepsFiscalYearToDate(t *testing.T) {
	ctx := context.Background()
	pool := migratedtest.Pool(t)
	body, err := os.ReadFile("testdata/mts_null_month.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := mts.NewDecoder().Decode(body, 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.FederalBudgets, Src: mts.SourceName, Items: p.Items}, mirror.Options{})
	if err != nil || st.Created != 2 || st.Malformed != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	var got string
	if err := pool.QueryRow(ctx, `SELECT string_agg(concat_ws('|', id, agency_name, account_title, coalesce(amount::text, 'null'),
		fiscal_year_to_date_amount, congress), E'\n' ORDER BY id) FROM federal_budget_lines`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	want := "outlays-2026-06-30-20002|Undistributed Offsetting Receipts|Offsetting Governmental Receipts|null|-1234567.89|119\n" +
		"outlays-2026-06-30-20003|Undistributed Offsetting Receipts|Employer Share, Employee Retirement|-7.00|-70.00|119"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
