package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// tracedEnv is newEnv with fixtures, traced by telemetry.Setup (RECORDSD_TRACING=on) into an OTLP receiver;
// flush exports every span ended so far (call it once).
func tracedEnv(t *testing.T, sampler, arg string) (*env, *testotlp.Receiver, func()) {
	t.Helper()
	r := testotlp.Start(t)
	setTracingEnv(t, r.Endpoint(), sampler, arg)
	tp, shutdown, err := telemetry.Setup(context.Background(), "recordsd")
	if err != nil {
		t.Fatal(err)
	}
	flush := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("tracer shutdown: %v", err)
		}
	}
	t.Cleanup(flush)
	e := newEnv(t, envOpts{tracer: tp})
	e.seedFixtures()
	return e, r, flush
}

func setTracingEnv(t testing.TB, endpoint, sampler, arg string) {
	for k, v := range map[string]string{
		"RECORDSD_TRACING": "on", "CIVICGATE_TRACING": "", "OTEL_SERVICE_NAME": "",
		"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": sampler, "OTEL_TRACES_SAMPLER_ARG": arg,
		"OTEL_PROPAGATORS": "",
	} {
		t.Setenv(k, v)
	}
}

// TestTracingContinuesCallersTrace: a request carrying a W3C traceparent (as the gateway's upstream span sends
// it) makes a server span in that trace under that parent, a graphql.operation span under it, a
// graphql.resolve span per root field under that, and the field's SQL as db.query spans below — one trace —
// with neither variables' values nor the query text in any attribute; /healthz makes no span.
func TestTracingContinuesCallersTrace(t *testing.T) {
	e, r, flush := tracedEnv(t, "parentbased_always_on", "")
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	const secret = "Infrastructure"
	body, _ := json.Marshal(map[string]any{
		"query":     `query FindBills($q: String) { bills(input: {q: $q, limit: 5}) { items { id } } members(input: {limit: 1}) { items { member_id } } }`,
		"variables": map[string]any{"q": secret},
	})
	status, b, _ := e.do(http.MethodPost, "/graphql", body, map[string]string{"traceparent": "00-" + traceID + "-" + parentID + "-01"})
	if status != http.StatusOK || !strings.Contains(string(b), "hr2882-118") {
		t.Fatalf("POST /graphql = %d %s", status, b)
	}
	if status, _, _ := e.do(http.MethodGet, "/healthz", nil, nil); status != http.StatusOK {
		t.Fatalf("healthz = %d", status)
	}
	if status, _ := e.getBills(url.Values{"congress": {"118"}}); status != http.StatusOK {
		t.Fatalf("GET /bills = %d", status)
	}
	flush()

	spans := r.Spans()
	byName := map[string][]testotlp.Span{}
	byID := map[string]testotlp.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		byID[s.SpanID] = s
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) || strings.Contains(v, "FindBills($q") {
				t.Errorf("span %q attribute %s = %q carries a variable's value or the query text", s.Name, k, v)
			}
		}
	}
	one := func(name string) testotlp.Span {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("want one %q span, got:\n%s", name, testotlp.Describe(spans))
		}
		return byName[name][0]
	}
	server := one("POST /graphql")
	if server.TraceID != traceID || server.ParentSpanID != parentID || server.Kind != "server" || server.Service != "recordsd" {
		t.Fatalf("server span does not continue the caller's trace: %+v", server)
	}
	op := one("graphql.operation")
	if op.ParentSpanID != server.SpanID || op.Attrs["graphql.operation.name"] != "FindBills" || op.Attrs["graphql.operation.type"] != "query" {
		t.Fatalf("operation span: %+v (server %s)", op, server.SpanID)
	}
	bills, members := one("graphql.resolve Query.bills"), one("graphql.resolve Query.members")
	for _, f := range []testotlp.Span{bills, members} {
		if f.ParentSpanID != op.SpanID || f.TraceID != traceID {
			t.Fatalf("root field span %q is not the operation's child: %+v", f.Name, f)
		}
	}
	// Every db.query of this trace descends from a root field span; the bills field ran at least one.
	underBills := 0
	for _, s := range byName["db.query"] {
		if s.TraceID != traceID {
			continue
		}
		anc := s
		for anc.ParentSpanID != "" && anc.Name != bills.Name && anc.Name != members.Name {
			anc = byID[anc.ParentSpanID]
		}
		if anc.Name != bills.Name && anc.Name != members.Name {
			t.Errorf("db.query %q is not under a root field", s.Attrs["db.query.text"])
		}
		if anc.SpanID == bills.SpanID {
			underBills++
		}
		if s.Attrs["db.system"] != "postgresql" || s.Attrs["db.query.text"] == "" {
			t.Errorf("db.query attributes: %v", s.Attrs)
		}
	}
	if underBills == 0 {
		t.Fatalf("no db.query span under %s:\n%s", bills.Name, testotlp.Describe(spans))
	}
	get := one("GET /bills")
	if get.ParentSpanID != "" || get.TraceID == traceID {
		t.Fatalf("GET /bills without a traceparent is not a root span of its own trace: %+v", get)
	}
	for _, s := range spans {
		if strings.Contains(s.Name, "healthz") {
			t.Fatalf("/healthz made a span: %+v", s)
		}
	}
}

// TestTracingHonoursUnsampledParent: a caller that did not sample (traceparent flags 00) gets nothing exported
// under the default parent-based sampler.
func TestTracingHonoursUnsampledParent(t *testing.T) {
	e, r, flush := tracedEnv(t, "parentbased_always_on", "")
	_ = e.gql(`{ bills(input: {limit: 1}) { items { id } } }`, nil) // sampled: a root span
	body, _ := json.Marshal(map[string]any{"query": `{ bills(input: {limit: 1}) { items { id } } }`})
	if status, b, _ := e.do(http.MethodPost, "/graphql", body,
		map[string]string{"traceparent": "00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}); status != http.StatusOK {
		t.Fatalf("POST /graphql = %d %s", status, b)
	}
	flush()
	traces := map[string]bool{}
	for _, s := range r.Spans() {
		traces[s.TraceID] = true
	}
	if len(traces) != 1 || traces["5bf92f3577b34da6a3ce929d0e0e4736"] {
		t.Fatalf("want exactly the sampled request's trace, got traces %v:\n%s", traces, testotlp.Describe(r.Spans()))
	}
}

// TestTracingMarksFailedRootField: a root field answering an error (a cursor that is not one of ours) has an
// error status on its graphql.resolve span and on the operation span, with no error text; the other root
// field's span stays unset.
func TestTracingMarksFailedRootField(t *testing.T) {
	e, r, flush := tracedEnv(t, "parentbased_always_on", "")
	res := e.gql(`{ bills(input: {cursor: "not-a-cursor"}) { items { id } } members(input: {limit: 1}) { items { member_id } } }`, nil)
	if len(res.Errors) == 0 {
		t.Fatal("a bad cursor answered no error")
	}
	flush()
	status := map[string]testotlp.Span{}
	for _, s := range r.Spans() {
		status[s.Name] = s
	}
	bills, members, op := status["graphql.resolve Query.bills"], status["graphql.resolve Query.members"], status["graphql.operation"]
	if bills.Status != "error" || bills.StatusMessage != "graphql errors" || bills.Attrs["graphql.errors.count"] != "1" {
		t.Errorf("failed field span: %+v", bills)
	}
	if members.Status != "unset" || op.Status != "error" {
		t.Errorf("members span %q, operation span %q: want unset and error\n%s", members.Status, op.Status, testotlp.Describe(r.Spans()))
	}
}
