package mirror_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/civicgate/civicgate/backend/mirror"
)

func benchItems(n int, title string) []mirror.Item {
	items := make([]mirror.Item, n)
	for i := range items {
		items[i] = bill(i+1, fmt.Sprintf("%s %d", title, i))
	}
	return items
}

// BenchmarkImport measures one 1,000-record import: every record changed (upsert + snapshot + event) versus
// every record unchanged (compare only, nothing written).
func BenchmarkImport(b *testing.B) {
	const n = 1000
	for _, mode := range []string{"changed", "unchanged"} {
		b.Run(mode, func(b *testing.B) {
			pool := newDB(b)
			eng := mirror.New(pool)
			ctx := context.Background()
			if _, err := eng.Run(ctx, &mirror.ItemsSource{Fam: mirror.Bills, Src: "bench", Items: benchItems(n, "v0")}, mirror.Options{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				title := "v0"
				if mode == "changed" {
					title = fmt.Sprintf("v%d", i+1)
				}
				items := benchItems(n, title)
				st, err := eng.Run(ctx, &mirror.ItemsSource{Fam: mirror.Bills, Src: "bench", Items: items}, mirror.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if (mode == "changed" && st.Updated != n) || (mode == "unchanged" && st.Unchanged != n) {
					b.Fatalf("%+v", st)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
