package gqlguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

func mustParse(t testing.TB, q string) *ast.QueryDocument {
	t.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: q})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc
}

func TestCostPlan(t *testing.T) {
	s, err := loadSchema("testdata/records.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	c := &compiler{schema: s.schema, rules: validationRules(true), maxTokens: 5000, limitArg: "limit", defaultSize: 25}
	for _, tc := range []struct {
		query string
		vars  map[string]any
		want  int64
	}{
		{`{ bill(id: 1) { title } }`, nil, 1},
		{`{ bills { items { id } } }`, nil, 1 + 25},
		{`{ bills(input: {limit: 3}) { items { id sponsors { name } } } }`, nil, 1 + 3*(1+25)},
		{`query($n: Int) { bills(input: {limit: $n}) { items { id } } }`, map[string]any{"n": int64(7)}, 1 + 7},
		{`query($n: Int) { bills(input: {limit: $n}) { items { id } } }`, map[string]any{}, 1 + 25},
		{`query($i: BillsInput) { bills(input: $i) { items { id } } }`, map[string]any{"i": map[string]any{"limit": int64(9)}}, 1 + 9},
		{`{ search(q: "x", limit: 4) { ... on Bill { id } } }`, nil, 4},
		{`{ bills(input: {limit: -5}) { items { id } } }`, nil, 1},
		{`{ ...P } fragment P on Query { bills(input: {limit: 2}) { ...I } } fragment I on BillsPage { items { id } }`, nil, 1 + 2},
	} {
		doc := c.compile(tc.query)
		if doc.refusal != nil {
			t.Fatalf("%s: refused %s", tc.query, doc.refusal)
		}
		if got := doc.ops[0].measures.Cost.Evaluate(tc.vars); got != tc.want {
			t.Errorf("%s %v: cost %d, want %d", tc.query, tc.vars, got, tc.want)
		}
	}
}

func TestCacheLRU(t *testing.T) {
	c := newDocCache(2)
	put := func(q string) { c.put(c.key(1, q), q, &compiledDoc{query: q}) }
	get := func(q string) bool { return c.get(c.key(1, q), q) != nil }
	put("a")
	put("b")
	if !get("a") { // a is now the most recent
		t.Fatal("a missing")
	}
	put("c") // evicts b
	if get("b") || !get("a") || !get("c") || c.len() != 2 {
		t.Fatalf("LRU order wrong: b=%v a=%v c=%v len=%d", get("b"), get("a"), get("c"), c.len())
	}
	if c.get(c.key(2, "a"), "a") != nil {
		t.Fatal("another schema hash must miss")
	}
	// A colliding key with a different text must miss.
	if c.get(c.key(1, "a"), "not a") != nil {
		t.Fatal("text mismatch must miss")
	}
}

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

// With introspection off no validation message suggests names (fields,
// arguments, types, enum values, leaf selections).
func TestNoSuggestionsWithoutIntrospection(t *testing.T) {
	s, err := loadSchema("testdata/records.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`{ bills { nextCursr } }`,
		`{ bills(inptu: {limit: 1}) { nextCursor } }`,
		`query($i: BillInput) { bills(input: $i) { nextCursor } }`,
		`{ regulatoryFilings(input: {type: RUEL}) { nextCursor } }`,
		`{ bills { items } }`,
	} {
		for _, introspection := range []bool{true, false} {
			c := &compiler{schema: s.schema, rules: validationRules(introspection), maxTokens: 5000, limitArg: "limit", defaultSize: 25}
			doc := c.compile(q)
			if doc.refusal == nil {
				t.Fatalf("%s: not refused", q)
			}
			suggests := strings.Contains(string(doc.refusal), "Did you mean")
			if !introspection && suggests {
				t.Errorf("introspection off, %s: %s", q, doc.refusal)
			}
			if introspection && !suggests && strings.Contains(q, "Cursr") {
				t.Errorf("introspection on, %s: expected a suggestion: %s", q, doc.refusal)
			}
		}
	}
}
