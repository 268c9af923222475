package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// tracedStack starts recordsd and the gateway (Caddyfile.local) with tracing
// on in both, exporting to one OTLP receiver, the response cache off so that
// every query reaches recordsd, and the batch processor flushing every
// 100 ms. It returns the stack, the receiver and a paid key.
func tracedStack(t *testing.T) (*stack.Stack, *testotlp.Receiver, string) {
	t.Helper()
	r := testotlp.Start(t)
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_TRACING", "on")
	s.Setenv("RECORDSD_TRACING", "on")
	s.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	s.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	s.Setenv("CIVICGATE_CACHE", "off")
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	key, _ := s.IssueKey("org-tracing", "paid_beta", "live")
	return s, r, key
}

// tracedQuery posts a members query with the given extra headers and
// returns the status and body.
func tracedQuery(t *testing.T, s *stack.Stack, key string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.HTTPSURL+"/v1/graphql",
		strings.NewReader(`{"query":"query TraceMe { members(input: {limit: 2}) { items { member_id name } } }","operationName":"TraceMe"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// spanNamed returns the first span of trace named name (and of the service,
// when not ""), or nil.
func spanNamed(spans []testotlp.Span, trace, name, service string) *testotlp.Span {
	for i := range spans {
		s := &spans[i]
		if s.TraceID == trace && s.Name == name && (service == "" || s.Service == service) {
			return s
		}
	}
	return nil
}

// TestTraceAcrossGatewayAndRecordsd: one request, sent with a client's
// traceparent (and then one without), is one trace holding the gateway's spans (gateway → civic_auth,
// civic_rate_limit, graphql_guard, upstream) and recordsd's
// (server span under upstream → graphql.operation → graphql.resolve →
// db.query). The client is not a trusted peer: the trace is the gateway's
// own, not sampled because the client asked, and links to the client's.
// The same stack then serves the dashboard check (dashboard_test.go), to
// spend one stack start on both.
func TestTraceAcrossGatewayAndRecordsd(t *testing.T) {
	t.Parallel()
	s, r, key := tracedStack(t)
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	status, body := tracedQuery(t, s, key, map[string]string{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"})
	if status != http.StatusOK || !strings.Contains(body, `"members"`) {
		t.Fatalf("status %d: %.300s", status, body)
	}

	var gw *testotlp.Span
	spans := r.WaitFor(t, 20*time.Second, func(spans []testotlp.Span) bool {
		gw = nil
		for i := range spans {
			if sp := &spans[i]; sp.Name == "gateway" && len(sp.Links) == 1 && sp.Links[0].TraceID == clientTrace {
				gw = sp
			}
		}
		if gw == nil {
			return false
		}
		// Every span this request makes, whatever batch each was exported in (a server span ends last).
		for _, name := range []string{"civic_auth", "civic_rate_limit", "graphql_guard", "upstream", "graphql.operation", "db.query"} {
			if spanNamed(spans, gw.TraceID, name, "") == nil {
				return false
			}
		}
		for _, sp := range spans {
			if sp.TraceID == gw.TraceID && sp.Service == "recordsd" && sp.Kind == "server" {
				return true
			}
		}
		return false
	})
	if gw.TraceID == clientTrace || gw.ParentSpanID != "" {
		t.Errorf("gateway span continues the untrusted client's trace: trace %s parent %q", gw.TraceID, gw.ParentSpanID)
	}
	if l := gw.Links[0]; l.SpanID != clientSpan || l.Attrs["civicgate.link"] != "client_traceparent" {
		t.Errorf("link to the client's trace: %+v", l)
	}
	if gw.Service == "recordsd" || gw.Kind != "server" {
		t.Errorf("gateway span: service %q kind %q", gw.Service, gw.Kind)
	}

	// The gateway's spans, children of its server span.
	for _, name := range []string{"civic_auth", "civic_rate_limit", "graphql_guard", "upstream"} {
		sp := spanNamed(spans, gw.TraceID, name, gw.Service)
		if sp == nil {
			t.Fatalf("no %s span in the trace:\n%s", name, testotlp.Describe(spans))
		}
		if sp.ParentSpanID != gw.SpanID {
			t.Errorf("%s: parent %s, want the gateway span %s", name, sp.ParentSpanID, gw.SpanID)
		}
	}
	// The request was admitted: by Redis, or (a call that missed the store
	// timeout on a loaded machine) by the in-memory fallback, which the span
	// says as such (modules/ratelimit/tracing.go).
	if rl := spanNamed(spans, gw.TraceID, "civic_rate_limit", gw.Service); rl.Attrs["civicgate.ratelimit.decision"] != "admitted" && rl.Attrs["civicgate.ratelimit.decision"] != "fallback" {
		t.Errorf("civic_rate_limit attributes: %v", rl.Attrs)
	}
	auth := spanNamed(spans, gw.TraceID, "civic_auth", gw.Service)
	if auth.Attrs["civicgate.auth.result"] != "ok" || !strings.HasPrefix(auth.Attrs["civicgate.org"], "org_") {
		t.Errorf("civic_auth attributes: %v", auth.Attrs)
	}
	// A first request misses the key cache and asks the store under civic_auth.
	if auth.Attrs["civicgate.auth.cache"] == "miss" {
		if look := spanNamed(spans, gw.TraceID, "civic_auth.store_lookup", gw.Service); look == nil || look.ParentSpanID != auth.SpanID {
			t.Errorf("a cache miss without a store_lookup span under civic_auth:\n%s", testotlp.Describe(spans))
		}
	}
	guard := spanNamed(spans, gw.TraceID, "graphql_guard", gw.Service)
	for k, want := range map[string]string{"graphql.operation.name": "TraceMe", "graphql.operation.type": "query", "civicgate.graphql.result": "ok"} {
		if guard.Attrs[k] != want {
			t.Errorf("graphql_guard %s = %q, want %q (%v)", k, guard.Attrs[k], want, guard.Attrs)
		}
	}
	if !strings.Contains(guard.Attrs["civicgate.graphql.families"], "members") || guard.Attrs["civicgate.graphql.cost"] == "" {
		t.Errorf("graphql_guard families/cost: %v", guard.Attrs)
	}

	// recordsd's side: its server span is the upstream span's child, across the process boundary.
	up := spanNamed(spans, gw.TraceID, "upstream", gw.Service)
	var server *testotlp.Span
	for i := range spans {
		if sp := &spans[i]; sp.TraceID == gw.TraceID && sp.Service == "recordsd" && sp.Kind == "server" {
			server = sp
		}
	}
	if server == nil || server.ParentSpanID != up.SpanID {
		t.Fatalf("recordsd's server span is not the upstream span's child:\n%s", testotlp.Describe(spans))
	}
	op := spanNamed(spans, gw.TraceID, "graphql.operation", "recordsd")
	if op == nil || op.ParentSpanID != server.SpanID {
		t.Fatalf("graphql.operation is not under recordsd's server span:\n%s", testotlp.Describe(spans))
	}
	ids := map[string]bool{}
	for _, sp := range spans {
		if sp.TraceID == gw.TraceID {
			ids[sp.SpanID] = true
		}
	}
	var resolvers, queries int
	for _, sp := range spans {
		if sp.TraceID != gw.TraceID {
			continue
		}
		if sp.SpanID != gw.SpanID && !ids[sp.ParentSpanID] {
			t.Errorf("span %q has a parent %s outside the trace", sp.Name, sp.ParentSpanID)
		}
		switch {
		case strings.HasPrefix(sp.Name, "graphql.resolve "):
			resolvers++
		case sp.Name == "db.query":
			queries++
		}
	}
	if resolvers == 0 || queries == 0 {
		t.Errorf("%d resolver and %d db.query spans in the trace", resolvers, queries)
	}
	// Without a traceparent: a trace of the gateway's own (no link) holding recordsd's server span under upstream.
	if status, body := tracedQuery(t, s, key, nil); status != http.StatusOK {
		t.Fatalf("no traceparent: status %d: %.300s", status, body)
	}
	r.WaitFor(t, 20*time.Second, func(spans []testotlp.Span) bool {
		for _, g := range spans {
			if g.Name != "gateway" || len(g.Links) != 0 || g.ParentSpanID != "" || g.Attrs["http.request.method"] != http.MethodPost {
				continue
			}
			up := spanNamed(spans, g.TraceID, "upstream", g.Service)
			for _, sp := range spans {
				if up != nil && sp.TraceID == g.TraceID && sp.Service == "recordsd" && sp.Kind == "server" && sp.ParentSpanID == up.SpanID {
					return true
				}
			}
		}
		return false
	})

	// The shipped dashboard against this gateway's metrics, after a few more kinds of request.
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer cg_live_0000000000000000000000000000"}} {
		tracedQuery(t, s, key, h)
	}
	t.Run("dashboard", func(t *testing.T) { checkDashboard(t, s) })
	s.CheckLogs(t, key)
}
