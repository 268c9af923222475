package analysis

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/civicgate/civicgate/modules/gqlguard/internal/reference"
)

// defaultListSize is graphql_guard's default_list_size.
const defaultListSize = 25

// recordsSchemaPath is the committed records schema the gateway ships with.
const recordsSchemaPath = "../../../backend/schema/records.graphqls"

func recordsSchema(t testing.TB) *ast.Schema {
	t.Helper()
	src, err := os.ReadFile(recordsSchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gqlparser.LoadSchema(&ast.Source{Name: recordsSchemaPath, Input: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustParse(t testing.TB, q string) *ast.QueryDocument {
	t.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: q})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc
}

// mustValidate parses and validates q (which sets the fields' definitions
// the cost reads), failing the test unless it validates.
func mustValidate(t testing.TB, schema *ast.Schema, q string) *ast.QueryDocument {
	t.Helper()
	doc := mustParse(t, q)
	if errs := validator.ValidateWithRules(schema, doc, rules.NewDefaultRules()); len(errs) > 0 {
		t.Fatalf("%s: %v", q, errs)
	}
	return doc
}

// measureValid measures every operation of a valid query in document order,
// as the document step compiles it.
func measureValid(t *testing.T, schema *ast.Schema, query string) map[string]Measures {
	t.Helper()
	doc := mustValidate(t, schema, query)
	w := NewWalker(doc, schema, "limit", defaultListSize)
	ops := make(map[string]Measures, len(doc.Operations))
	for _, op := range doc.Operations {
		ops[op.Name] = w.Measure(op)
	}
	return ops
}

// A chain of fragments each spreading the next twice expands to 2^n copies:
// the walker must measure it in linear steps and saturate the counts.
func TestWalkerExponentialFragmentsStayLinear(t *testing.T) {
	const n = 70
	var b strings.Builder
	b.WriteString("{ ...F0 }\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { a: __typename }\n", n)
	doc := mustParse(t, b.String())
	w := NewWalker(doc, nil, "limit", 25)
	m := w.Measure(doc.Operations[0])
	if m.Aliases != Saturated || m.RootFields != Saturated {
		t.Fatalf("aliases %d root fields %d, want saturated %d", m.Aliases, m.RootFields, int64(Saturated))
	}
	if w.steps > 4*int64(n+2) {
		t.Fatalf("walker took %d steps for %d fragments", w.steps, n)
	}
}

// Cycles are cut even without validation (NoFragmentCycles runs later).
func TestWalkerCutsFragmentCycles(t *testing.T) {
	doc := mustParse(t, "{ ...A } fragment A on Query { bills { nextCursor } ...B } fragment B on Query { ...A }")
	w := NewWalker(doc, nil, "limit", 25)
	m := w.Measure(doc.Operations[0])
	if !w.cycle {
		t.Fatal("cycle not reported")
	}
	if m.Depth != 2 || m.RootFields != 1 || len(m.RootNames) != 1 || m.RootNames[0] != "bills" {
		t.Fatalf("measures %+v", m)
	}
}

// A fragment chain doubling at every step (2^30 expansions), each fragment
// adding its own root field, spread by many operations at different points:
// every operation gets the full name set of its suffix of the chain, and the
// walk stays linear in the document.
func TestRootAttributionDoublingChainStaysLinear(t *testing.T) {
	const n, ops = 30, 60
	var b strings.Builder
	for i := 0; i < ops; i++ {
		fmt.Fprintf(&b, "query Q%d { ...F%d }\n", i, i%n)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d f%02d ...F%d }\n", i, i+1, i, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { f%02d __schema { queryType { name } } }\n", n, n)
	doc := mustParse(t, b.String())
	w := NewWalker(doc, nil, "limit", defaultListSize)
	for i, op := range doc.Operations {
		m := w.Measure(op)
		var want []string
		for k := i % n; k <= n; k++ {
			want = append(want, fmt.Sprintf("f%02d", k))
		}
		if strings.Join(m.RootNames, ",") != strings.Join(want, ",") {
			t.Fatalf("operation %s: root names %v, want %v", op.Name, m.RootNames, want)
		}
		if m.Introspection == nil || m.Introspection.Line != ops+n+1 {
			t.Fatalf("operation %s: introspection %v, want the one in F%d", op.Name, m.Introspection, n)
		}
		// F30 has 2 root fields, Fk has 2×Fk+1 + 1: 3×2^(30-k) - 1.
		if want := int64(3)<<(n-i%n) - 1; m.RootFields != want {
			t.Fatalf("operation %s: root fields %d, want %d", op.Name, m.RootFields, want)
		}
	}
	// Each selection of an operation or a fragment is visited at most twice
	// (cost walk and root attribution).
	if selections := int64(ops + 3*n + 4); w.steps > 2*selections {
		t.Fatalf("walker took %d steps for %d selections", w.steps, selections)
	}
}

// More root names than the walker scans (16) and than one bitset word holds
// (64), shared by fragments and operations, some met again after the walker
// switched to its map: the names agree with the reference expander in every
// operation.
func TestRootAttributionManyNames(t *testing.T) {
	const frags, perFrag, ops = 10, 15, 6
	var b strings.Builder
	for i := 0; i < ops; i++ {
		// own0 and n000 again: names met first, then again past the scan.
		fmt.Fprintf(&b, "query Q%d { own%d own0 n000 ...F%d ... on Query { ...F%d } }\n", i, i, (i*3)%frags, (i*7+2)%frags)
	}
	for i := 0; i < frags; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query {", i)
		for k := 0; k < perFrag; k++ {
			fmt.Fprintf(&b, " n%03d", (i*perFrag+k)*7%(frags*perFrag))
		}
		if i+1 < frags {
			fmt.Fprintf(&b, " ...F%d", i+1)
		}
		b.WriteString(" }\n")
	}
	query := b.String()
	doc := mustParse(t, query)
	ref := reference.New(doc, defaultListSize)
	w := NewWalker(doc, nil, "limit", defaultListSize)
	for _, op := range doc.Operations {
		want := ref.Measure(op)
		if len(want.Names) <= 64 && op.Name == "Q0" {
			t.Fatalf("Q0 reaches only %d names", len(want.Names))
		}
		compareMeasures(t, query, "many names", op.Name, w.Measure(op), want)
	}
}

// rootWant is an operation's expected root attribution: names (sorted,
// comma-separated), root field count, and the first introspection field as
// the byte offset of its first character in the one-line document (-1: none).
type rootWant struct {
	names  string
	fields int64
	intro  int
}

func checkRoot(t *testing.T, query, name string, m Measures, want rootWant) {
	t.Helper()
	if got := strings.Join(m.RootNames, ","); got != want.names {
		t.Errorf("operation %s: root names %q, want %q", name, got, want.names)
	}
	if m.RootFields != want.fields {
		t.Errorf("operation %s: root fields %d, want %d", name, m.RootFields, want.fields)
	}
	switch {
	case want.intro < 0 && m.Introspection != nil:
		t.Errorf("operation %s: introspection at %d:%d, want none", name, m.Introspection.Line, m.Introspection.Column)
	case want.intro >= 0 && m.Introspection == nil:
		t.Errorf("operation %s: no introspection found, want column %d (%q…)", name, want.intro+1, query[want.intro:])
	case want.intro >= 0 && (m.Introspection.Line != 1 || m.Introspection.Column != want.intro+1):
		t.Errorf("operation %s: introspection at %d:%d, want 1:%d", name, m.Introspection.Line, m.Introspection.Column, want.intro+1)
	}
}

const lobbyingTwoOps = `query A { ...F } query B { ...F } fragment F on Query { lobbyingDisclosures(input:{limit:2}) { items { id registrant_name income } } }`

// TestSharedFragmentRootAttribution: a fragment contributes the same root
// names, count and introspection position to every operation that spreads
// it, directly, through chains or inline fragments, whichever operation of
// the document reached it first.
func TestSharedFragmentRootAttribution(t *testing.T) {
	schema := recordsSchema(t)
	const lob = "lobbyingDisclosures"
	at := func(query, marker string) int {
		i := strings.Index(query, marker)
		if i < 0 {
			t.Fatalf("marker %q not in %s", marker, query)
		}
		return i
	}
	type tc struct {
		name  string
		query string
		want  map[string]rootWant
	}
	cases := []tc{
		{"shared fragment, second operation", lobbyingTwoOps,
			map[string]rootWant{"A": {lob, 1, -1}, "B": {lob, 1, -1}}},
		{"chain F to G, G spread by an earlier operation",
			`query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { regulatoryFilings(input:{limit:2}) { items { id } } }`,
			map[string]rootWant{"A": {"regulatoryFilings", 1, -1}, "B": {"regulatoryFilings", 1, -1}}},
		{"chain reached through its head first",
			`query A { bills { nextCursor } ...F } query B { ...G } query C { ...H } fragment F on Query { ...G } fragment G on Query { ...H members { nextCursor } } fragment H on Query { federalBudgets(input: {dataset: OUTLAYS}) { nextCursor } }`,
			map[string]rootWant{"A": {"bills,federalBudgets,members", 3, -1}, "B": {"federalBudgets,members", 2, -1}, "C": {"federalBudgets", 1, -1}}},
		{"same fragment spread twice",
			`query A { ...F ...F } query B { bills { nextCursor } ...F ...F } fragment F on Query { lobbyingDisclosures { nextCursor } }`,
			map[string]rootWant{"A": {lob, 2, -1}, "B": {"bills," + lob, 3, -1}}},
		{"spreads inside inline fragments",
			`query A { ...F } query B { ... on Query { ...F } } query C { ... { ... on Query { ...F } } } fragment F on Query { lobbyingDisclosures { nextCursor } }`,
			map[string]rootWant{"A": {lob, 1, -1}, "B": {lob, 1, -1}, "C": {lob, 1, -1}}},
		{"inline fragments inside the fragment",
			`query A { ...F } query B { members { nextCursor } ...F } fragment F on Query { ... on Query { lobbyingDisclosures { nextCursor } } ... @include(if: true) { regulatoryFilings { nextCursor } } }`,
			map[string]rootWant{"A": {lob + ",regulatoryFilings", 2, -1}, "B": {lob + ",members,regulatoryFilings", 3, -1}}},
		{"aliases",
			`query A { ...F } query B { ...F } fragment F on Query { x: lobbyingDisclosures(input:{limit:2}) { items { id } } bills: federalBudgets(input: {dataset: OUTLAYS}) { nextCursor } }`,
			map[string]rootWant{"A": {"federalBudgets," + lob, 2, -1}, "B": {"federalBudgets," + lob, 2, -1}}},
		{"directives on spreads and fields count as selected",
			`query A { ...F @include(if: true) } query B($v: Boolean!) { ...F @skip(if: $v) } query C { ...F @skip(if: true) } query D { ... @include(if: false) { ...F } } fragment F on Query { lobbyingDisclosures @include(if: false) { nextCursor } }`,
			map[string]rootWant{"A": {lob, 1, -1}, "B": {lob, 1, -1}, "C": {lob, 1, -1}, "D": {lob, 1, -1}}},
	}
	schemaInShared := `query A { ...F } query B { bills { nextCursor } ...F } fragment F on Query { s: __schema { queryType { name } } }`
	typeInChain := `query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { __type(name: "Bill") { name } }`
	firstInExpansion := `query A { ...F } query B { ...F __schema { queryType { name } } } fragment F on Query { __type(name: "Bill") { name } }`
	directFirst := `query A { ...F } query B { __schema { queryType { name } } ...F } fragment F on Query { __type(name: "Bill") { name } }`
	cases = append(cases,
		tc{"__schema in a shared fragment", schemaInShared,
			map[string]rootWant{"A": {"", 1, at(schemaInShared, "s: __schema")}, "B": {"bills", 2, at(schemaInShared, "s: __schema")}}},
		tc{"__type through a chain shared with an earlier operation", typeInChain,
			map[string]rootWant{"A": {"", 1, at(typeInChain, "__type")}, "B": {"", 1, at(typeInChain, "__type")}}},
		tc{"first introspection field in expansion order, fragment first", firstInExpansion,
			map[string]rootWant{"A": {"", 1, at(firstInExpansion, "__type")}, "B": {"", 2, at(firstInExpansion, "__type")}}},
		tc{"first introspection field in expansion order, direct field first", directFirst,
			map[string]rootWant{"A": {"", 1, at(directFirst, "__type")}, "B": {"", 2, at(directFirst, "__schema")}}},
	)
	// The operation touching the unentitled field first, in the middle and
	// last, with the fragment also reached by another operation before or
	// after it.
	ops := map[string]string{
		"U": `query U { ...L }`,
		"V": `query V { bills { nextCursor } ...L }`,
		"W": `query W { members { nextCursor } }`,
	}
	for _, order := range [][3]string{{"U", "V", "W"}, {"U", "W", "V"}, {"V", "U", "W"}, {"V", "W", "U"}, {"W", "U", "V"}, {"W", "V", "U"}} {
		q := ops[order[0]] + " " + ops[order[1]] + " " + ops[order[2]] + " fragment L on Query { lobbyingDisclosures { nextCursor } }"
		cases = append(cases, tc{"order " + strings.Join(order[:], ""), q,
			map[string]rootWant{"U": {lob, 1, -1}, "V": {"bills," + lob, 2, -1}, "W": {"members", 1, -1}}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops := measureValid(t, schema, tc.query)
			if len(ops) != len(tc.want) {
				t.Fatalf("%d operations, want %d", len(ops), len(tc.want))
			}
			for name, want := range tc.want {
				checkRoot(t, tc.query, name, ops[name], want)
			}
		})
	}
}

// TestCostWeightParsing: Int and String weights, and directives that are
// not the specification's (no weight argument) are ignored.
func TestCostWeightParsing(t *testing.T) {
	for src, want := range map[string]int64{
		`@cost(weight: 3)`:       3,
		`@cost(weight: "3")`:     3,
		`@cost(weight: "0.1")`:   1,
		`@cost(weight: "-2")`:    0,
		`@cost(weight: "1e300")`: Saturated,
		`@cost(complexity: 9)`:   -1,
		`@cost(weight: "lots")`:  -1,
	} {
		doc, err := parser.ParseQuery(&ast.Source{Input: "{ f " + src + " }"})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := costWeight(doc.Operations[0].SelectionSet[0].(*ast.Field).Directives)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("%s: weight %d (ok %v), want %d", src, got, ok, want)
		}
	}
}
