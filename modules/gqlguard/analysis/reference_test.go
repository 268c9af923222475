package analysis

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/gqlguard/internal/reference"
)

// docGen writes random valid documents against the records schema: several
// named operations, fragments on Query spreading later fragments (so no
// cycles), inline fragments, aliases and directives. Each root field always
// has the same arguments and selection within a document, and an alias is
// always <a|b>_<field>, so fields never conflict.
type docGen struct {
	rnd    *rand.Rand
	fields []genField // this document's root fields
	used   []bool     // fragment i is spread somewhere
}

// genField is a root field: name, arguments ("%d": a random limit) and
// selection.
type genField struct{ name, args, sel string }

var genRootFields = []genField{
	{"bills", "(input: {limit: %d})", " { items { id } nextCursor }"},
	{"bill", `(id: "hr1-118")`, " { id officialTitle }"},
	{"members", "(input: {limit: %d})", " { items { name terms { congress } } }"},
	{"regulatoryFilings", "(input: {limit: %d})", " { items { id agencies { name } } }"},
	{"federalBudgets", "(input: {dataset: OUTLAYS, limit: %d})", " { nextCursor items { id } }"},
	{"lobbyingDisclosures", "(input: {limit: %d})", " { items { id registrant_name income activities { lobbyists { name } } } }"},
	{"lobbyingDisclosures", "", " { nextCursor }"},
	{"__typename", "", ""},
	{"__schema", "", " { queryType { name } }"},
	{"__type", `(name: "Bill")`, " { name }"},
}

var genDirectives = []string{"", "", "", " @include(if: true)", " @skip(if: false)", " @skip(if: true)", " @include(if: false)"}

func (g *docGen) document() string {
	g.fields = g.fields[:0]
	var lobbying bool
	for _, f := range genRootFields {
		if f.name == "lobbyingDisclosures" {
			// One shape per document (the two differ in arguments).
			if lobbying || g.rnd.Intn(2) == 0 {
				continue
			}
			lobbying = true
		}
		if strings.Contains(f.args, "%d") {
			f.args = fmt.Sprintf(f.args, 1+g.rnd.Intn(5))
		}
		g.fields = append(g.fields, f)
	}
	nFrags := g.rnd.Intn(7)
	g.used = make([]bool, nFrags)
	frags := make([]string, nFrags)
	for i := nFrags - 1; i >= 0; i-- {
		frags[i] = fmt.Sprintf("fragment F%d on Query {%s }", i, g.selection(i+1, nFrags, 0))
	}
	ops := make([][]string, 1+g.rnd.Intn(5))
	for i := range ops {
		ops[i] = []string{g.selection(0, nFrags, 0)}
	}
	// Every fragment must be used (NoUnusedFragments): spread the unused ones
	// from a random operation.
	for i, u := range g.used {
		if !u {
			k := g.rnd.Intn(len(ops))
			ops[k] = append(ops[k], fmt.Sprintf(" ...F%d", i))
		}
	}
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "query Q%d {%s }\n", i, strings.Join(op, ""))
	}
	for _, f := range frags {
		b.WriteString(f + "\n")
	}
	return b.String()
}

// selection writes 1–4 selections; spreads may name fragments from..n-1.
func (g *docGen) selection(from, n, nesting int) string {
	var b strings.Builder
	for range 1 + g.rnd.Intn(4) {
		switch k := g.rnd.Intn(10); {
		case k < 2 && nesting < 3:
			cond := []string{" on Query", ""}[g.rnd.Intn(2)]
			fmt.Fprintf(&b, " ...%s%s {%s }", cond, g.directive(), g.selection(from, n, nesting+1))
		case k < 5 && from < n:
			i := from + g.rnd.Intn(n-from)
			g.used[i] = true
			fmt.Fprintf(&b, " ...F%d%s", i, g.directive())
		default:
			f := g.fields[g.rnd.Intn(len(g.fields))]
			alias := ""
			if g.rnd.Intn(3) == 0 {
				alias = []string{"a_", "b_"}[g.rnd.Intn(2)] + f.name + ": "
			}
			fmt.Fprintf(&b, " %s%s%s%s%s", alias, f.name, f.args, g.directive(), f.sel)
		}
	}
	return b.String()
}

func (g *docGen) directive() string { return genDirectives[g.rnd.Intn(len(genDirectives))] }

// TestRootAttributionMatchesReference compares the walker with the
// non-memoised reference on random documents: every operation's root names,
// root field count, first introspection field, depth, aliases, directives and
// cost, with operations measured in document order (compile) and in a
// shuffled order (each a fresh walker; document order with the schema, as
// the document step compiles).
func TestRootAttributionMatchesReference(t *testing.T) {
	schema := recordsSchema(t)
	g := &docGen{rnd: rand.New(rand.NewSource(20240611))}
	shared := 0
	for n := 0; n < 400; n++ {
		query := g.document()
		parsed := mustValidate(t, schema, query) // sets field definitions
		ref := reference.New(parsed, defaultListSize)
		want := make(map[string]reference.Measures, len(parsed.Operations))
		for _, op := range parsed.Operations {
			want[op.Name] = ref.Measure(op)
		}
		w := NewWalker(parsed, schema, "limit", defaultListSize)
		for _, op := range parsed.Operations {
			compareMeasures(t, query, "document order", op.Name, w.Measure(op), want[op.Name])
		}
		w = NewWalker(parsed, nil, "limit", defaultListSize)
		for _, i := range g.rnd.Perm(len(parsed.Operations)) {
			op := parsed.Operations[i]
			compareMeasures(t, query, "shuffled", op.Name, w.Measure(op), want[op.Name])
		}
		if len(parsed.Operations) > 1 && len(parsed.Fragments) > 0 {
			shared++
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if shared < 150 {
		t.Fatalf("only %d documents with several operations and fragments", shared)
	}
}

func compareMeasures(t *testing.T, query, how, op string, got Measures, want reference.Measures) {
	t.Helper()
	names := make([]string, 0, len(want.Names))
	for n := range want.Names {
		names = append(names, n)
	}
	sort.Strings(names)
	if !slices.Equal(got.RootNames, names) {
		t.Errorf("%s, operation %s: root names %v, want %v\n%s", how, op, got.RootNames, names, query)
	}
	if got.RootFields != want.RootFields {
		t.Errorf("%s, operation %s: root fields %d, want %d\n%s", how, op, got.RootFields, want.RootFields, query)
	}
	if pos(got.Introspection) != pos(want.Intro) {
		t.Errorf("%s, operation %s: introspection at %s, want %s\n%s", how, op, pos(got.Introspection), pos(want.Intro), query)
	}
	if got.Depth != want.Depth || got.Aliases != want.Aliases || got.Directives != want.Directives {
		t.Errorf("%s, operation %s: depth/aliases/directives %d/%d/%d, want %d/%d/%d\n%s", how, op,
			got.Depth, got.Aliases, got.Directives, want.Depth, want.Aliases, want.Directives, query)
	}
	if cost := got.Cost.Evaluate(nil); cost != want.Cost {
		t.Errorf("%s, operation %s: cost %d, want %d\n%s", how, op, cost, want.Cost, query)
	}
}

func pos(p *ast.Position) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Column)
}
