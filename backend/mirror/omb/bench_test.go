package omb_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/omb"
)

// edition writes a synthetic budget-authority release shaped like OMB's FY2016 file: rows × (1976, TQ,
// 1977…2020) columns, CRLF, quoted thousands, every 150th row without an account code.
func edition(rows int) []byte {
	var b bytes.Buffer
	b.WriteString("Agency Code,Agency Name,Bureau Code,Bureau Name,Account Code,Account Name,Treasury Agency Code," +
		"Subfunction Code,Subfunction Title,BEA Category,On- or Off- Budget,1976,TQ")
	for y := 1977; y <= 2020; y++ {
		fmt.Fprintf(&b, ",%d", y)
	}
	b.WriteString("\r\n")
	for r := range rows {
		account := fmt.Sprintf("%06d", 100000+r)
		name := fmt.Sprintf("Salaries and expenses, program %d", r)
		if r%150 == 0 {
			account, name = "", fmt.Sprintf("Receipts, program %d", r)
		}
		fmt.Fprintf(&b, "%03d,Agency %d,%02d,Bureau %d,%s,\"%s\",%03d,%d,Subfunction %d,Discretionary,On-budget",
			r%60, r%60, r%40, r%40, account, name, r%60, 800+r%20, r%20)
		for c := range 46 {
			v := (r*7 + c*13) % 250000
			if v >= 1000 {
				fmt.Fprintf(&b, ",\"%d,%03d\"", v/1000, v%1000)
			} else {
				fmt.Fprintf(&b, ",%d", v)
			}
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// BenchmarkImportEdition imports one OMB edition (4,500 rows × 46 amount columns ≈ 207,000 lines, the size
// of a real release) into an empty database with the default batch size, every line created (row, snapshot
// and change event). Run with -benchtime 1x: one iteration takes tens of seconds. Results: BENCHMARKS.md
// "OMB edition import".
func BenchmarkImportEdition(b *testing.B) {
	const rows = 4500
	data := edition(rows)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pool := migratedtest.Pool(b)
		b.StartTimer()
		items, ed, err := omb.ParseEdition(bytes.NewReader(data), omb.Options{})
		if err != nil {
			b.Fatal(err)
		}
		st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.FederalBudgets, Src: omb.SourceName,
			Items: items, ScopePrefix: omb.Scope(ed)}, mirror.Options{})
		if err != nil || st.Created != rows*46 || st.Malformed != 0 {
			b.Fatalf("%+v %v", st, err)
		}
	}
	b.ReportMetric(float64(rows*46*b.N)/b.Elapsed().Seconds(), "lines/s")
	if !strings.Contains(string(data[:200]), "TQ") {
		b.Fatal("no TQ column")
	}
}
