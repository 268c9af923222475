package document

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// testCompiler is the compiler of a guard with the given schema file and the
// default limits (introspection on).
func testCompiler(tb testing.TB, path string) *Compiler {
	tb.Helper()
	s, err := LoadSchema(path)
	if err != nil {
		tb.Fatal(err)
	}
	return NewCompiler(Config{Schema: s, Introspection: true, MaxTokens: 5000, LimitArgument: "limit", DefaultListSize: 25})
}

const testSchema = "../testdata/records.graphqls"

// benchBillsQuery is the guard's BenchmarkServeBillsQueryCached document.
const benchBillsQuery = `query Bills($congress: Int, $cursor: String) {
  bills(input: {congress: $congress, type: "hr", cursor: $cursor, limit: 50}) {
    items { id congress type number title introducedDate latestAction { date text } sponsors { bioguideId name party state } }
    nextCursor
  }
}`

func TestCostPlan(t *testing.T) {
	c := testCompiler(t, testSchema)
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
		doc := c.Compile(tc.query)
		if doc.Refusal != nil {
			t.Fatalf("%s: refused %s", tc.query, doc.Refusal)
		}
		if got := doc.Ops[0].Measures.Cost.Evaluate(tc.vars); got != tc.want {
			t.Errorf("%s %v: cost %d, want %d", tc.query, tc.vars, got, tc.want)
		}
	}
}

func TestCacheLRU(t *testing.T) {
	c := NewCache(2)
	put := func(q string) { c.Put(c.Key(1, q), q, &Doc{Query: q}) }
	get := func(q string) bool { return c.Get(c.Key(1, q), q) != nil }
	put("a")
	put("b")
	if !get("a") { // a is now the most recent
		t.Fatal("a missing")
	}
	put("c") // evicts b
	if get("b") || !get("a") || !get("c") || c.Len() != 2 {
		t.Fatalf("LRU order wrong: b=%v a=%v c=%v len=%d", get("b"), get("a"), get("c"), c.Len())
	}
	if c.Get(c.Key(2, "a"), "a") != nil {
		t.Fatal("another schema hash must miss")
	}
	// A colliding key with a different text must miss.
	if c.Get(c.Key(1, "a"), "not a") != nil {
		t.Fatal("text mismatch must miss")
	}
}

// With introspection off no validation message suggests names (fields,
// arguments, types, enum values, leaf selections).
func TestNoSuggestionsWithoutIntrospection(t *testing.T) {
	s, err := LoadSchema(testSchema)
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
			c := NewCompiler(Config{Schema: s, Introspection: introspection, MaxTokens: 5000, LimitArgument: "limit", DefaultListSize: 25})
			doc := c.Compile(q)
			if doc.Refusal == nil {
				t.Fatalf("%s: not refused", q)
			}
			suggests := strings.Contains(string(doc.Refusal), "Did you mean")
			if !introspection && suggests {
				t.Errorf("introspection off, %s: %s", q, doc.Refusal)
			}
			if introspection && !suggests && strings.Contains(q, "Cursr") {
				t.Errorf("introspection on, %s: expected a suggestion: %s", q, doc.Refusal)
			}
		}
	}
}

// Baseline: gqlparser's own parse + validate of the same document.
func BenchmarkBaselineGqlparserParseValidate(b *testing.B) {
	c := testCompiler(b, testSchema)
	b.ReportAllocs()
	for b.Loop() {
		doc, err := parser.ParseQuery(&ast.Source{Input: benchBillsQuery})
		if err != nil {
			b.Fatal(err)
		}
		if errs := validator.ValidateWithRules(c.schema, doc, ruleSet(true)); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// Uncached: token scan + parse + validate + limit walk of a typical bills query.
func BenchmarkCompileBillsQueryUncached(b *testing.B) {
	c := testCompiler(b, testSchema)
	b.ReportAllocs()
	for b.Loop() {
		if doc := c.Compile(benchBillsQuery); doc.Refusal != nil {
			b.Fatal(string(doc.Refusal))
		}
	}
}

// Cache hit: hash the query and find its compiled document (0 allocs).
func BenchmarkCacheHit(b *testing.B) {
	c := testCompiler(b, testSchema)
	cache := NewCache(4096)
	cache.Put(cache.Key(42, benchBillsQuery), benchBillsQuery, c.Compile(benchBillsQuery))
	b.ReportAllocs()
	for b.Loop() {
		if cache.Get(cache.Key(42, benchBillsQuery), benchBillsQuery) == nil {
			b.Fatal("miss")
		}
	}
}
