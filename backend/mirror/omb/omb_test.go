package omb_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/omb"
)

func parse(t *testing.T, path string, opt omb.Options) []mirror.Item {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	items, err := omb.Parse(f, opt)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestMapsEveryField(t *testing.T) {
	ctx := context.Background()
	pool := migratedtest.Pool(t)
	items := parse(t, "testdata/budauth.csv", omb.Options{})
	st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.FederalBudgets, Src: omb.SourceName, Items: items}, mirror.Options{})
	// Row 1: 2024, 2025 ("." = no value); row 2: 2024, 2025, 2026 (0 is a value).
	if err != nil || st.Created != 5 {
		t.Fatalf("%+v %v", st, err)
	}
	rows, err := pool.Query(ctx, `SELECT concat_ws('|', dataset, fiscal_year, congress, coalesce(month, '-'), coalesce(record_date::text, '-'),
		agency_code, agency_name, bureau_code, bureau_name, account_code, account_title, subfunction_code, subfunction_title, bea_category,
		on_off_budget, amount, coalesce(fiscal_year_to_date_amount::text, '-'), source_url) FROM federal_budget_lines ORDER BY account_code, fiscal_year`)
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
	u := omb.SourceURL
	want := []string{
		"APPROPRIATIONS|2024|118|-|-|001|Legislative Branch|05|Senate|0100|Compensation of Members, Senate|801|Legislative functions|Mandatory|On-budget|24000000.00|-|" + u,
		"APPROPRIATIONS|2025|118|-|-|001|Legislative Branch|05|Senate|0100|Compensation of Members, Senate|801|Legislative functions|Mandatory|On-budget|24500000.00|-|" + u,
		"APPROPRIATIONS|2024|118|-|-|001|Legislative Branch|05|Senate|0110|Salaries, Officers and Employees|801|Legislative functions|Discretionary|On-budget|245678000.00|-|" + u,
		"APPROPRIATIONS|2025|118|-|-|001|Legislative Branch|05|Senate|0110|Salaries, Officers and Employees|801|Legislative functions|Discretionary|On-budget|-1200000.00|-|" + u,
		"APPROPRIATIONS|2026|119|-|-|001|Legislative Branch|05|Senate|0110|Salaries, Officers and Employees|801|Legislative functions|Discretionary|On-budget|0.00|-|" + u,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Fiscal-year bounds.
	if n := len(parse(t, "testdata/budauth.csv", omb.Options{FromYear: 2026})); n != 1 {
		t.Fatalf("from 2026: %d lines", n)
	}
}

func TestMalformedLine(t *testing.T) {
	items := parse(t, "testdata/malformed.csv", omb.Options{})
	if len(items) != 2 || items[0].Err != nil || items[1].Err == nil || items[1].Pos != "line 3" || !strings.Contains(items[1].Err.Error(), `"12x"`) {
		t.Fatalf("%+v", items)
	}
	if _, err := omb.Parse(strings.NewReader("a,b,c\n1,2,3\n"), omb.Options{}); err == nil {
		t.Fatal("a CSV without the budget columns was accepted")
	}
}
