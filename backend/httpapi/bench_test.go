package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// BenchmarkGraphQLBills measures end-to-end POST /graphql latency (HTTP + identity + gqlgen + PostgreSQL) on
// 100k bills: first page, a page reached by cursor ~1000 pages deep, a filter, and full-text search.
// The full-scale numbers (1M bills, p50/p99, concurrency) are make bench-backend's job (backend/bench).
func BenchmarkGraphQLBills(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.exec(`INSERT INTO bills (id, congress, type, number, official_title, introduced_date, member_name, committee_names)
		SELECT 'hr' || g || '-' || (93 + g % 27), 93 + g % 27, 'hr', g,
		  'A bill relating to ' || (ARRAY['water','veterans','energy','taxation','health','education','defense'])[1 + g % 7] || CASE WHEN g % 20000 = 0 THEN ' quasar' ELSE '' END,
		  CASE WHEN g % 50 = 0 THEN NULL ELSE DATE '1973-01-01' + (g % 18000) END, 'Rep. Person ' || (g % 500), 'Committee on Ways and Means'
		FROM generate_series(1, 100000) g`)
	e.exec(`ANALYZE bills`)
	// Reach a deep cursor by walking 1000 pages of 25 once.
	in := map[string]any{"limit": 100}
	for i := 0; i < 250; i++ {
		p := e.list("bills", billsIDsQuery, map[string]any{"in": in})
		in["cursor"] = *p.NextCursor
	}
	deep := in["cursor"].(string)
	cases := []struct {
		name string
		vars map[string]any
	}{
		{"first_page", map[string]any{}},
		{"deep_page_25000", map[string]any{"cursor": deep}}, // limit is not bound to the cursor: 25 like first_page
		{"congress", map[string]any{"congress": 118}},
		{"q_common", map[string]any{"q": "veterans"}},
		{"q_rare", map[string]any{"q": "quasar"}},
		{"q_bill_number", map[string]any{"q": "H.R. 4242"}},
	}
	const q = `query($in: BillsInput) { bills(input: $in) { items { id congress type number officialTitle introducedDate memberName committeeNames lastSyncedAt } nextCursor } }`
	for _, c := range cases {
		body, _ := json.Marshal(map[string]any{"query": q, "variables": map[string]any{"in": c.vars}})
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tok := token(b) // the gateway signs a fresh assertion per request (a few µs)
				req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Civic-Identity", tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
