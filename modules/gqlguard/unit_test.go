package gqlguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	dto "github.com/prometheus/client_model/go"
)

func provisioned(t testing.TB, g *Guard) *Guard {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if g.Schema == "" {
		g.Schema = "testdata/records.graphqls"
	}
	if err := g.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return g
}

type recordNext struct{ body []byte }

func (n *recordNext) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	b := make([]byte, r.ContentLength)
	if _, err := r.Body.Read(b); err != nil && len(b) > 0 {
		return err
	}
	n.body = b
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// A cache hit parses nothing; a different document or operation name still works.
func TestCacheHitDoesNotReparse(t *testing.T) {
	g := provisioned(t, &Guard{})
	body := `{"query":"query A { bills { nextCursor } } query B { members { nextCursor } }","operationName":"A"}`
	for i := 0; i < 3; i++ {
		next := &recordNext{}
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
		if w.Code != http.StatusNoContent || string(next.body) != body {
			t.Fatalf("round %d: %d %q", i, w.Code, next.body)
		}
	}
	if got := g.parses.Load(); got != 1 {
		t.Fatalf("parsed %d times, want 1", got)
	}
}

func TestProvisionRefusesUnknownFamilyField(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	g := &Guard{Schema: "testdata/records.graphqls", Families: map[string][]string{"bills": {"billz"}}}
	err := g.Provision(ctx)
	if err == nil || !strings.Contains(err.Error(), `root field "billz" is not a field of Query`) {
		t.Fatalf("err = %v", err)
	}
}

func TestMetricsCountOutcomes(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	g := &Guard{Schema: "testdata/records.graphqls", MaxDepth: 1, MeasureOnly: true}
	if err := g.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	// A second guard in the same config shares the collectors.
	g2 := &Guard{Schema: "testdata/records.graphqls"}
	if err := g2.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	send := func(g *Guard, method, body string) {
		r := httptest.NewRequest(method, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if err := g.ServeHTTP(httptest.NewRecorder(), r, &recordNext{}); err != nil {
			t.Fatal(err)
		}
	}
	reg := ctx.GetMetricsRegistry()
	cases := []struct {
		name, label, value string
		want               float64
	}{
		{"civicgate_graphql_guard_requests_total", "outcome", outcomeMethod, 2},
		{"civicgate_graphql_guard_requests_total", "outcome", outcomeAllowed, 1},
		{"civicgate_graphql_guard_requests_total", "outcome", outcomeParseFailed, 1},
		{"civicgate_graphql_guard_measure_only_violations_total", "limit", codeTooDeep, 1},
	}
	// The collectors live for the process (they survive reloads: other tests
	// counted with them too), so what is checked is the increase.
	before := make([]float64, len(cases))
	for i, tc := range cases {
		before[i] = counterValue(t, reg, tc.name, tc.label, tc.value)
	}
	send(g, http.MethodGet, "")
	send(g2, http.MethodGet, "")
	send(g, http.MethodPost, `{"query":"{ bills { nextCursor } }"}`)
	send(g, http.MethodPost, `{"query":"{ bills { nextCursor } "}`)
	for i, tc := range cases {
		if got := counterValue(t, reg, tc.name, tc.label, tc.value) - before[i]; got != tc.want {
			t.Errorf("%s{%s=%q} +%v, want +%v", tc.name, tc.label, tc.value, got, tc.want)
		}
	}
}

func counterValue(t *testing.T, reg interface {
	Gather() ([]*dto.MetricFamily, error)
}, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Per-request checks still run on a cache hit: the escaped bearer token in a
// cached document's string literal, and variable coercion.
func TestCacheHitStillChecksRequest(t *testing.T) {
	g := provisioned(t, &Guard{})
	const token = "cg_test_abcdefghijklmnopqrstuvwxyz012345"
	query := `query($n: Int) { bills(input: {q: "\\u0063` + token[1:] + `", limit: $n}) { items { id } nextCursor } }`
	send := func(vars string, auth bool) (int, string) {
		body := `{"query":"` + strings.ReplaceAll(query, `"`, `\"`) + `","variables":` + vars + `}`
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if auth {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, &recordNext{}); err != nil {
			t.Fatal(err)
		}
		return w.Code, w.Body.String()
	}
	if code, body := send(`{"n":5}`, false); code != http.StatusNoContent {
		t.Fatalf("first: %d %s", code, body)
	}
	if code, body := send(`{"n":5}`, true); code != 400 || body != `{"errors":[{"message":"Request must not contain the bearer token"}]}` {
		t.Fatalf("escaped token on a hit: %d %s", code, body)
	}
	if code, body := send(`{"n":"x"}`, false); code != 400 || !strings.Contains(body, `Variable \"$n\" is invalid`) {
		t.Fatalf("bad variable on a hit: %d %s", code, body)
	}
	if code, body := send(`{"n":100000}`, false); code != 200 || !strings.Contains(body, "QUERY_TOO_COMPLEX") {
		t.Fatalf("cost from variables on a hit: %d %s", code, body)
	}
	if got := g.parses.Load(); got != 1 {
		t.Fatalf("parsed %d times, want 1", got)
	}
}
