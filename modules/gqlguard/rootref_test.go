package gqlguard

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
)

// refMeasures are an operation's measures computed the obvious way: every
// fragment spread is expanded again where it occurs (no memo), a fragment
// already on the current path is skipped.
type refMeasures struct {
	names      map[string]bool
	rootFields int64
	intro      *ast.Position
	depth      int64
	aliases    int64
	directives int64
	cost       int64
}

type reference struct {
	frags       map[string]*ast.FragmentDefinition
	defaultSize int64
}

func newReference(doc *ast.QueryDocument) *reference {
	r := &reference{frags: map[string]*ast.FragmentDefinition{}, defaultSize: DefaultListSize}
	for _, f := range doc.Fragments {
		r.frags[f.Name] = f
	}
	return r
}

func (r *reference) measure(op *ast.OperationDefinition) refMeasures {
	m := refMeasures{names: map[string]bool{}}
	r.root(op.SelectionSet, &m, map[string]bool{})
	m.depth = r.depthOf(op.SelectionSet, map[string]bool{})
	m.aliases = r.aliasesOf(op.SelectionSet, map[string]bool{})
	m.directives = int64(len(op.Directives)) + r.directivesOf(op.SelectionSet, map[string]bool{})
	for _, v := range op.VariableDefinitions {
		m.directives += int64(len(v.Directives))
	}
	m.cost = r.costOf(op.SelectionSet, r.defaultSize, map[string]bool{})
	return m
}

// expand calls f with the selection set of the fragment a spread names,
// unless it is unknown or already on the path.
func (r *reference) expand(s *ast.FragmentSpread, path map[string]bool, f func(ast.SelectionSet)) {
	def := r.frags[s.Name]
	if def == nil || path[s.Name] {
		return
	}
	path[s.Name] = true
	f(def.SelectionSet)
	delete(path, s.Name)
}

func (r *reference) root(sel ast.SelectionSet, m *refMeasures, path map[string]bool) {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			m.rootFields++
			switch s.Name {
			case "__schema", "__type":
				if m.intro == nil {
					m.intro = s.Position
				}
			case "__typename":
			default:
				m.names[s.Name] = true
			}
		case *ast.InlineFragment:
			r.root(s.SelectionSet, m, path)
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { r.root(fs, m, path) })
		}
	}
}

func (r *reference) depthOf(sel ast.SelectionSet, path map[string]bool) int64 {
	var d int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			d = max(d, 1+r.depthOf(s.SelectionSet, path))
		case *ast.InlineFragment:
			d = max(d, r.depthOf(s.SelectionSet, path))
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { d = max(d, r.depthOf(fs, path)) })
		}
	}
	return d
}

func (r *reference) aliasesOf(sel ast.SelectionSet, path map[string]bool) int64 {
	var n int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.Alias != "" && s.Alias != s.Name {
				n++
			}
			n += r.aliasesOf(s.SelectionSet, path)
		case *ast.InlineFragment:
			n += r.aliasesOf(s.SelectionSet, path)
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { n += r.aliasesOf(fs, path) })
		}
	}
	return n
}

func (r *reference) directivesOf(sel ast.SelectionSet, path map[string]bool) int64 {
	var n int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			n += int64(len(s.Directives)) + r.directivesOf(s.SelectionSet, path)
		case *ast.InlineFragment:
			n += int64(len(s.Directives)) + r.directivesOf(s.SelectionSet, path)
		case *ast.FragmentSpread:
			n += int64(len(s.Directives))
			r.expand(s, path, func(fs ast.SelectionSet) {
				n += int64(len(r.frags[s.Name].Directives)) + r.directivesOf(fs, path)
			})
		}
	}
	return n
}

// costOf is the cost of sel when the enclosing field hands down size: a list
// with its own literal limit costs limit × (object + selection), a list
// without one costs size × (…), a non-list field with a limit hands it to
// its selection.
func (r *reference) costOf(sel ast.SelectionSet, size int64, path map[string]bool) int64 {
	var c int64
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			var obj int64
			if len(s.SelectionSet) > 0 {
				obj = 1
			}
			list := s.Definition != nil && s.Definition.Type.Elem != nil
			limit, own := literalLimit(s)
			switch {
			case list && own:
				c += limit * (obj + r.costOf(s.SelectionSet, r.defaultSize, path))
			case list:
				c += size * (obj + r.costOf(s.SelectionSet, r.defaultSize, path))
			case own:
				c += obj + r.costOf(s.SelectionSet, limit, path)
			default:
				c += obj + r.costOf(s.SelectionSet, r.defaultSize, path)
			}
		case *ast.InlineFragment:
			c += r.costOf(s.SelectionSet, size, path)
		case *ast.FragmentSpread:
			r.expand(s, path, func(fs ast.SelectionSet) { c += r.costOf(fs, size, path) })
		}
	}
	return c
}

// literalLimit finds `limit: N` or `input: {limit: N}` (the only shapes the
// generated documents use).
func literalLimit(f *ast.Field) (int64, bool) {
	for _, a := range f.Arguments {
		if a.Name == "limit" && a.Value.Kind == ast.IntValue {
			return parseLimitLiteral(a.Value.Raw), true
		}
		if a.Value.Kind == ast.ObjectValue {
			for _, ch := range a.Value.Children {
				if ch.Name == "limit" && ch.Value.Kind == ast.IntValue {
					return parseLimitLiteral(ch.Value.Raw), true
				}
			}
		}
	}
	return 0, false
}

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
// shuffled order (a fresh walker).
func TestRootAttributionMatchesReference(t *testing.T) {
	c := recordsCompiler(t)
	g := &docGen{rnd: rand.New(rand.NewSource(20240611))}
	shared := 0
	for n := 0; n < 400; n++ {
		query := g.document()
		doc := c.compile(query)
		if doc.refusal != nil {
			t.Fatalf("generated document refused: %s\n%s", doc.refusal, query)
		}
		parsed := mustParse(t, query)
		if errs := validate(c.schema, parsed, c.rules); len(errs) > 0 { // sets field definitions
			t.Fatal(errs)
		}
		ref := newReference(parsed)
		want := make(map[string]refMeasures, len(parsed.Operations))
		for _, op := range parsed.Operations {
			want[op.Name] = ref.measure(op)
		}
		for _, op := range doc.ops {
			compareMeasures(t, query, "compile", op.name, op.measures, want[op.name])
		}
		w := newWalker(parsed, "limit", DefaultListSize)
		for _, i := range g.rnd.Perm(len(parsed.Operations)) {
			op := parsed.Operations[i]
			compareMeasures(t, query, "shuffled", op.Name, w.measure(op), want[op.Name])
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

func compareMeasures(t *testing.T, query, how, op string, got opMeasures, want refMeasures) {
	t.Helper()
	names := make([]string, 0, len(want.names))
	for n := range want.names {
		names = append(names, n)
	}
	sort.Strings(names)
	if !slices.Equal(got.rootNames, names) {
		t.Errorf("%s, operation %s: root names %v, want %v\n%s", how, op, got.rootNames, names, query)
	}
	if got.rootFields != want.rootFields {
		t.Errorf("%s, operation %s: root fields %d, want %d\n%s", how, op, got.rootFields, want.rootFields, query)
	}
	if pos(got.introspection) != pos(want.intro) {
		t.Errorf("%s, operation %s: introspection at %s, want %s\n%s", how, op, pos(got.introspection), pos(want.intro), query)
	}
	if got.depth != want.depth || got.aliases != want.aliases || got.directives != want.directives {
		t.Errorf("%s, operation %s: depth/aliases/directives %d/%d/%d, want %d/%d/%d\n%s", how, op,
			got.depth, got.aliases, got.directives, want.depth, want.aliases, want.directives, query)
	}
	if cost := got.cost.evaluate(nil); cost != want.cost {
		t.Errorf("%s, operation %s: cost %d, want %d\n%s", how, op, cost, want.cost, query)
	}
}

func pos(p *ast.Position) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Column)
}
