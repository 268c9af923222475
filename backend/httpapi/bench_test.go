package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/httpapi"
)

// benchBills is the 100k-bill database of the bills benchmarks, served by the compiled path and by gqlgen's
// executor (httpapi.Config.ReferenceExecutor), with its request bodies.
type benchBills struct {
	e        *env
	ref      *httptest.Server
	refAPI   *httpapi.Server
	cases    []benchCase
	executor []benchExecutor
}

type benchCase struct {
	name string
	body []byte
}

type benchExecutor struct {
	name    string
	url     string
	handler http.Handler
}

func newBenchBills(b *testing.B) *benchBills {
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
	const page = `query($in: BillsInput) { bills(input: $in) { items { id congress type number officialTitle introducedDate memberName committeeNames lastSyncedAt } nextCursor } }`
	const titles = `query($in: BillsInput) { bills(input: $in) { items { officialTitle } nextCursor } }`
	bb := &benchBills{e: e}
	for _, c := range []struct {
		name  string
		query string
		vars  map[string]any
	}{
		{"first_page", page, map[string]any{}},
		{"title_only", titles, map[string]any{}},
		{"deep_page_25000", page, map[string]any{"cursor": deep}}, // limit is not bound to the cursor: 25 like first_page
		{"congress", page, map[string]any{"congress": 118}},
		{"q_common", page, map[string]any{"q": "veterans"}},
		{"q_rare", page, map[string]any{"q": "quasar"}},
		{"q_bill_number", page, map[string]any{"q": "H.R. 4242"}},
	} {
		body, _ := json.Marshal(map[string]any{"query": c.query, "variables": map[string]any{"in": c.vars}})
		bb.cases = append(bb.cases, benchCase{c.name, body})
	}
	bb.refAPI = e.referenceAPI()
	bb.ref = httptest.NewServer(bb.refAPI.Handler())
	b.Cleanup(bb.ref.Close)
	bb.executor = []benchExecutor{
		{"compiled", e.srv.URL, e.api.Handler()},
		{"reference", bb.ref.URL, bb.refAPI.Handler()},
	}
	return bb
}

// processCPU is the CPU time the process has used (user + system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGraphQLBills measures end-to-end POST /graphql latency (HTTP + identity + executor + PostgreSQL) on
// 100k bills — first page, a title-only page, a page reached by cursor ~1000 pages deep, a filter, and
// full-text search — for the compiled read path and gqlgen's executor side by side (each case's two
// executors run one after the other). cpu-ns/op is the process's CPU time per request: the server's and the
// HTTP client's (see BenchmarkGraphQLBillsHandler for the server alone). The full-scale numbers (1M bills,
// p50/p99, concurrency) are make bench-backend's job (backend/bench).
func BenchmarkGraphQLBills(b *testing.B) {
	bb := newBenchBills(b)
	for _, c := range bb.cases {
		for _, x := range bb.executor {
			b.Run(c.name+"/"+x.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu := processCPU(b)
				for b.Loop() {
					tok := token(b) // the gateway signs a fresh assertion per request (a few µs)
					req, _ := http.NewRequest(http.MethodPost, x.url+"/graphql", bytes.NewReader(c.body))
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
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkGraphQLBillsHandler is BenchmarkGraphQLBills without the network and the HTTP client: the handler
// serves each request in the benchmark's goroutine (identity check, executor, PostgreSQL round trip, JSON), so
// allocs/op and cpu-ns/op are the server's own (pgx's included) per page.
func BenchmarkGraphQLBillsHandler(b *testing.B) {
	bb := newBenchBills(b)
	for _, c := range bb.cases {
		for _, x := range bb.executor {
			b.Run(c.name+"/"+x.name, func(b *testing.B) {
				tok := token(b) // valid 30 s; one sub-benchmark takes about 1 s per round
				req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Civic-Identity", tok)
				w := &discardWriter{h: http.Header{}}
				b.ReportAllocs()
				cpu := processCPU(b)
				for b.Loop() {
					req.Body = io.NopCloser(bytes.NewReader(c.body))
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

// discardWriter is an http.ResponseWriter that keeps the status only.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return len(p), nil
}
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
