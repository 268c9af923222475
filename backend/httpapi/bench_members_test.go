package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkGraphQLMembersHandler is BenchmarkGraphQLBillsHandler for members: 20k members with 1–6 terms each,
// 25-member pages with their terms (and without), the compiled path and gqlgen's executor side by side (each
// case's two executors one after the other).
func BenchmarkGraphQLMembersHandler(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.exec(`INSERT INTO members (member_id, bioguide_id, name, state)
		SELECT 'M' || lpad(g::text, 6, '0'), 'M' || lpad(g::text, 6, '0'), 'Member ' || md5(g::text), (ARRAY['NC','WA','NY','TX'])[1 + g % 4]
		FROM generate_series(1, 20000) g`)
	e.exec(`INSERT INTO member_terms (member_id, congress, chamber, party, seq)
		SELECT 'M' || lpad(g::text, 6, '0'), 100 + (g + k) % 20, (ARRAY['house','senate'])[1 + k % 2], (ARRAY['Democrat','Republican'])[1 + g % 2], 0
		FROM generate_series(1, 20000) g, generate_series(0, 5) k WHERE k <= g % 6 ON CONFLICT DO NOTHING`)
	e.exec(`ANALYZE members`)
	e.exec(`ANALYZE member_terms`)
	const withTerms = `query($in: MembersInput) { members(input: $in) { items { member_id bioguide_id name state terms { congress chamber party } } nextCursor } }`
	const namesOnly = `query($in: MembersInput) { members(input: $in) { items { name } nextCursor } }`
	refAPI := e.referenceAPI()
	executors := []benchExecutor{{"compiled", "", e.api.Handler()}, {"reference", "", refAPI.Handler()}}
	for _, c := range []struct {
		name  string
		query string
		vars  map[string]any
	}{
		{"first_page_terms", withTerms, map[string]any{}},
		{"names_only", namesOnly, map[string]any{}},
		{"congress_terms", withTerms, map[string]any{"congress": 110}},
	} {
		body, _ := json.Marshal(map[string]any{"query": c.query, "variables": map[string]any{"in": c.vars}})
		for _, x := range executors {
			b.Run(c.name+"/"+x.name, func(b *testing.B) {
				tok := token(b)
				req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Civic-Identity", tok)
				w := &discardWriter{h: http.Header{}}
				b.ReportAllocs()
				cpu := processCPU(b)
				for b.Loop() {
					req.Body = io.NopCloser(bytes.NewReader(body))
					clear(w.h)
					w.status = 0
					x.handler.ServeHTTP(w, req)
					if w.status != 200 {
						b.Fatalf("status %d", w.status)
					}
				}
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
