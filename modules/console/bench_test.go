package console

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// BenchmarkPages renders every console page for an organization with 10 000
// keys and 90 days of usage (newBigOrg), as the operator, through the
// handler with real PostgreSQL: ns/op is the server time of one page,
// bytes/page its weight (docs/benchmarks-log.md "Organization console"; target ≤ 50 ms
// and ≤ 100 KB).
func BenchmarkPages(b *testing.B) {
	big := newBigOrg(b)
	pages := big.pages()
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	sort.Strings(names)
	// The baseline, measured in the same run: one PostgreSQL round trip
	// (SELECT 1 through the same pool). Pages are reported as multiples of it
	// in BENCHMARKS.md, since absolute times drift with the machine's load.
	b.Run("baseline-select1", func(b *testing.B) {
		for b.Loop() {
			var one int
			if err := big.h.pool.QueryRow(b.Context(), `SELECT 1`).Scan(&one); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			var size int
			for b.Loop() {
				w := big.get(pages[name])
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d\n%s", name, w.Code, w.Body.String())
				}
				size = w.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}

// BenchmarkOperationsAnswer times the Operations page's answer on the
// console's fixture over 30 days: the keys' rows the page added up before
// (keys_rows, usage.Operations) against the organization's sums it reads now
// (org_sums, usage.OrganizationOperations, docs/design.md D83), in three
// alternating rounds so a changing load weighs on both.
func BenchmarkOperationsAnswer(b *testing.B) {
	big := newBigOrg(b)
	args := usage.OperationsArgs{Org: big.orgID, Since: 30 * 24 * time.Hour}
	for range 3 {
		b.Run("keys_rows", func(b *testing.B) {
			for b.Loop() {
				if _, err := usage.Operations(b.Context(), big.h.pool, args); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("org_sums", func(b *testing.B) {
			for b.Loop() {
				if _, err := usage.OrganizationOperations(b.Context(), big.h.pool, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPagesOfABigOrganization renders every page of the benchmark's
// organization once: each answers 200 within the page weight budget
// (≤ 100 KB), shows one page of keys, not 10 000, and the right totals.
func TestPagesOfABigOrganization(t *testing.T) {
	big := newBigOrg(t)
	for name, path := range big.pages() {
		w := big.get(path)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", name, w.Code, w.Body.String())
		}
		if n := w.Body.Len(); n > 100<<10 {
			t.Errorf("%s weighs %d bytes, over 100 KB", name, n)
		}
		body := w.Body.String()
		switch name {
		case "keys":
			if rows := strings.Count(body, `<tr id="key-`); rows != pageSize {
				t.Errorf("keys page lists %d keys, want a page of %d", rows, pageSize)
			}
			if !strings.Contains(body, "Older keys") {
				t.Error("keys page has no link to the next page")
			}
		case "usage-90d":
			if strings.Contains(body, "No requests in this period") {
				t.Error("90-day usage chart is empty")
			}
		case "operations-30d":
			if rows := strings.Count(body, `<tr class="operation-row">`); rows != operationsListed || !strings.Contains(body, "200 more not shown.") {
				t.Errorf("operations page lists %d of the 300 operations, want %d and the rest counted", rows, operationsListed)
			}
			if rows := strings.Count(body, `<tr class="deprecated-row">`); rows != 3 || !strings.Contains(body, " and 5 more") {
				t.Errorf("operations page lists %d deprecated coordinates, want 3, each naming 5 operations and counting the others", rows)
			}
		case "organizations":
			if rows := strings.Count(body, `<tr><td data-label="Name"><a href="/orgs/`); rows != pageSize {
				t.Errorf("organizations page lists %d, want %d", rows, pageSize)
			}
		}
	}
}
