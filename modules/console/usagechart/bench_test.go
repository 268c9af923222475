package usagechart

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// benchRows is hours of hourly rows for keys keys, ending at t0 + 24h.
func benchRows(keys, hours int) []usage.Row {
	rows := make([]usage.Row, 0, keys*hours)
	end := t0.Add(24 * time.Hour)
	for h := range hours {
		at := end.Add(time.Duration(h-hours) * time.Hour)
		for k := range keys {
			n := int64(100 + (h*7+k)%900)
			rows = append(rows, usage.Row{KeyID: "key_" + strconv.Itoa(k), OrgID: "org", Start: at,
				Delta: usage.Delta{Admitted: n, Refused: n / 50, ClientErrors: n / 30, ServerErrors: n / 200, Cost: 3 * n}})
		}
	}
	return rows
}

func benchChart(b *testing.B, rows []usage.Row, keyID string, from, to time.Time, step time.Duration) {
	var out bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out.Reset()
		pts := Bucket(rows, keyID, from, to, step)
		if err := SVG(&out, pts, Options{Title: "Usage of " + keyID, Step: step}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.Len()), "bytes/svg")
}

// 90 days of hourly rows of one key (2160 rows), bucketed by day.
func BenchmarkBucketAndSVG90Days(b *testing.B) {
	end := t0.Add(24 * time.Hour)
	benchChart(b, benchRows(1, 90*24), "key_0", end.Add(-90*24*time.Hour), end, 24*time.Hour)
}

// 7 days of hourly rows of one key, in 168 hourly buckets: the largest
// chart the console draws.
func BenchmarkBucketAndSVG168Hours(b *testing.B) {
	end := t0.Add(24 * time.Hour)
	benchChart(b, benchRows(1, 168), "key_0", end.Add(-168*time.Hour), end, time.Hour)
}

// 24 hours of hourly rows of 10 000 keys (240 000 rows), summed.
func BenchmarkBucketAndSVG10000Keys(b *testing.B) {
	end := t0.Add(24 * time.Hour)
	benchChart(b, benchRows(10_000, 24), "", end.Add(-24*time.Hour), end, time.Hour)
}

func BenchmarkCSV10000Keys(b *testing.B) {
	rows := benchRows(10_000, 24)
	var out bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		if err := CSV(&out, rows, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.Len()), "bytes/csv")
}
