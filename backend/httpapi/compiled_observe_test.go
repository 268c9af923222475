package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// TestCompiledPathSpans: an operation served by a compiled plan makes the spans gqlgen's tracing extension
// makes — graphql.operation under the server span, graphql.resolve Query.<field> per root field under it,
// the field's SQL as db.query below — with the same attributes.
func TestCompiledPathSpans(t *testing.T) {
	e, r, flush := tracedEnv(t, "parentbased_always_on", "")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	body, _ := json.Marshal(map[string]any{
		"query": `query Named { bills(input: {limit: 2}) { items { id } } one: bill(id: "hr2882-118") { id } }`,
	})
	for range 2 { // the document's first request and its cache hit both run the plan
		status, b, _ := e.do(http.MethodPost, "/graphql", body, map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"})
		if status != http.StatusOK || !strings.Contains(string(b), `"one":{"id":"hr2882-118"}`) {
			t.Fatalf("POST /graphql = %d %s", status, b)
		}
	}
	if n := compiledExecutions(t, e.api); n != 2 {
		t.Fatalf("compiled executions %v, want 2", n)
	}
	flush()
	spans := r.Spans()
	byID := map[string]testotlp.Span{}
	count := map[string]int{}
	for _, s := range spans {
		byID[s.SpanID] = s
		count[s.Name]++
	}
	for name, want := range map[string]int{"POST /graphql": 2, "graphql.operation": 2, "graphql.resolve Query.bills": 2, "graphql.resolve Query.bill": 2} {
		if count[name] != want {
			t.Fatalf("%d %q spans, want %d:\n%s", count[name], name, want, testotlp.Describe(spans))
		}
	}
	underField := 0
	for _, s := range spans {
		parent := byID[s.ParentSpanID]
		switch {
		case s.Name == "graphql.operation":
			if parent.Name != "POST /graphql" || s.Attrs["graphql.operation.name"] != "Named" || s.Attrs["graphql.operation.type"] != "query" || s.Status != "unset" {
				t.Errorf("operation span %+v (parent %q)", s, parent.Name)
			}
		case strings.HasPrefix(s.Name, "graphql.resolve "):
			if parent.Name != "graphql.operation" || s.Attrs["graphql.field.name"] != strings.TrimPrefix(s.Name, "graphql.resolve Query.") {
				t.Errorf("root field span %+v (parent %q)", s, parent.Name)
			}
		case s.Name == "db.query" && s.TraceID == traceID:
			if !strings.HasPrefix(parent.Name, "graphql.resolve ") {
				t.Errorf("db.query under %q, not a root field", parent.Name)
			}
			underField++
		}
	}
	if underField < 4 {
		t.Fatalf("%d db.query spans under the root fields, want 4:\n%s", underField, testotlp.Describe(spans))
	}
}

// TestExecutionsCounted: recordsd_graphql_executions_total counts a bills page as compiled, a lobbying page with
// an introspection field as reference (no plan covers it), a bad cursor as reference (the error is gqlgen's to write), and with
// Config.ReferenceExecutor every operation as reference; root field timings are recorded either way.
func TestExecutionsCounted(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	_ = e.gql(`{ bills(input: {limit: 1}) { items { id } } }`, nil)
	_ = e.gql(`{ bills(input: {limit: 1}) { items { id } } }`, nil)
	_ = e.gql(`{ lobbyingDisclosures(input: {limit: 1}) { items { id } } __type(name: "Bill") { name } }`, nil)
	_ = e.gql(`{ bills(input: {cursor: "nope"}) { items { id } } }`, nil)
	for line, want := range map[string]string{
		`recordsd_graphql_executions_total{executor="compiled"}`:                                  "2",
		`recordsd_graphql_executions_total{executor="reference"}`:                                 "2",
		`recordsd_graphql_field_duration_seconds_count{field="bills",outcome="ok"}`:               "2",
		`recordsd_graphql_field_duration_seconds_count{field="bills",outcome="error"}`:            "1",
		`recordsd_graphql_field_duration_seconds_count{field="lobbyingDisclosures",outcome="ok"}`: "1",
	} {
		if got := metricValue(t, e.api, line); got != want {
			t.Errorf("%s = %s, want %s", line, got, want)
		}
	}

	refAPI := e.referenceAPI()
	ref := httptest.NewServer(refAPI.Handler())
	defer ref.Close()
	body, _ := json.Marshal(map[string]any{"query": `{ bills(input: {limit: 1}) { items { id } } }`})
	for range 2 {
		if a := postGraphQL(t, ref.URL, body, ""); a.status != http.StatusOK {
			t.Fatalf("reference answered %d %s", a.status, a.body)
		}
	}
	if got := metricValue(t, refAPI, `recordsd_graphql_executions_total{executor="compiled"}`); got != "0" {
		t.Errorf("ReferenceExecutor compiled %s operations", got)
	}
	if got := metricValue(t, refAPI, `recordsd_graphql_executions_total{executor="reference"}`); got != "2" {
		t.Errorf("ReferenceExecutor: %s reference executions, want 2", got)
	}
}

// metricValue is the value of the exposition line starting with series (name and labels), or "".
func metricValue(t testing.TB, api interface{ MetricsHandler() http.Handler }, series string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	api.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}
