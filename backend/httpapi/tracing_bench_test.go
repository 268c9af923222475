package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// tracingModes are the configurations the tracing benchmarks compare: off (the default), on with 10 % of
// root traces sampled (the budget case), and on with every request sampled (the cost of one sampled
// request). Spans go to an OTLP receiver on loopback that discards them.
var tracingModes = []struct{ name, on, sampler, arg string }{
	{"off", "", "", ""},
	{"on_10pct", "on", "traceidratio", "0.1"},
	{"on_100pct", "on", "always_on", ""},
}

// benchTracedEnv is a recordsd with fixtures in the given tracing mode (see tracingModes).
func benchTracedEnv(b *testing.B, on, sampler, arg string) *env {
	r := testotlp.StartDiscarding(b)
	setTracingEnv(b, r.Endpoint(), sampler, arg)
	b.Setenv("RECORDSD_TRACING", on)
	tp, shutdown, err := telemetry.Setup(context.Background(), "recordsd")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = shutdown(ctx)
	})
	if (on == "on") != telemetry.Enabled(tp) {
		b.Fatalf("RECORDSD_TRACING=%q: enabled = %v", on, telemetry.Enabled(tp))
	}
	e := newEnv(b, envOpts{tracer: tp})
	e.seedFixtures()
	return e
}

// BenchmarkTracingOverheadRouting is the per-request cost of the tracing middleware alone: an in-process
// request (no network, no database) for a path recordsd does not serve (404 before any identity check).
// Off, the handler is the untraced one itself; the difference between the modes is the server span's cost.
func BenchmarkTracingOverheadRouting(b *testing.B) {
	for _, m := range tracingModes {
		b.Run(m.name, func(b *testing.B) {
			h := benchTracedEnv(b, m.on, m.sampler, m.arg).srv.Config.Handler
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/nothing", nil))
				if w.Code != http.StatusNotFound {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkTracingOverheadGraphQL is a whole in-process POST /graphql in each mode: "typename" runs the
// identity check and gqlgen without touching the database (the server, operation and root-field spans of a
// sampled request, nothing else: a stable measure), "members" also runs two SQL statements on PostgreSQL (their
// db.query spans included; the database's own time dominates and varies).
func BenchmarkTracingOverheadGraphQL(b *testing.B) {
	queries := []struct{ name, query string }{
		{"typename", `{ __typename }`},
		{"members", `{ members(input: {limit: 2}) { items { member_id name } } }`},
	}
	for _, q := range queries {
		body, _ := json.Marshal(map[string]any{"query": q.query})
		for _, m := range tracingModes {
			b.Run(q.name+"/"+m.name, func(b *testing.B) {
				h := benchTracedEnv(b, m.on, m.sampler, m.arg).srv.Config.Handler
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Civic-Identity", token(b))
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("status %d %s", w.Code, w.Body)
					}
				}
			})
		}
	}
}

// BenchmarkTracingMiddleware is the server span's cost alone, around a handler that does nothing. The request
// has no traceparent, so every one starts a trace of its own and traceidratio 0.1 records one in ten (a fixed
// incoming trace id would be sampled always or never).
func BenchmarkTracingMiddleware(b *testing.B) {
	nothing := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, m := range tracingModes {
		b.Run(m.name, func(b *testing.B) {
			r := testotlp.StartDiscarding(b)
			setTracingEnv(b, r.Endpoint(), m.sampler, m.arg)
			b.Setenv("RECORDSD_TRACING", m.on)
			tp, shutdown, err := telemetry.Setup(context.Background(), "recordsd")
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = shutdown(context.Background()) }()
			h := httpapi.Traced(httpapi.Config{TracerProvider: tp}, nothing)
			req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}
