package document

import (
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
)

// FuzzLimits: the token scanner, parser, validator and limit walker never
// panic, and the walker's work is linear in the document's tokens however
// fragments spread each other. Seeds: testdata/fuzz/FuzzLimits.
func FuzzLimits(f *testing.F) {
	for _, s := range []string{
		`{ bills(input: {limit: 10}) { items { id sponsors { name } } nextCursor } }`,
		`query Q($n: Int, $i: BillsInput) { a: bills(input: {limit: $n}) { items { id } } b: bills(input: $i) { nextCursor } }`,
		`{ ...A } fragment A on Query { ...B ...B } fragment B on Query { ...C ...C } fragment C on Query { t: __typename }`,
		`{ ...A } fragment A on Query { ...A }`,
		`query __schema { __schema { types { fields { type { ofType { name } } } } } }`,
		`{ bills { ... on BillsPage { items { ... on Bill { ...X } } } } } fragment X on Bill { sponsors { terms { congress } } }`,
		`mutation { noop }`, `{`, `"""`, `{ a(b: "\u0041") }`,
	} {
		f.Add(s)
	}
	s, err := LoadSchema(testSchema)
	if err != nil {
		f.Fatal(err)
	}
	c := NewCompiler(Config{Schema: s, MaxTokens: 5000, MeasureOnly: true, LimitArgument: "limit", DefaultListSize: 25})
	f.Fuzz(func(t *testing.T, query string) {
		scan := scanTokens(query, 5000, false)
		if doc, err := parser.ParseQuery(&ast.Source{Input: query}); err == nil {
			w := analysis.NewWalker(doc, nil, "limit", 25)
			for _, op := range doc.Operations {
				m := w.Measure(op)
				_ = m.Cost.Evaluate(map[string]any{"n": int64(1000)})
			}
			if limit := 2*int64(scan.count) + 2; w.Steps() > limit {
				t.Fatalf("walker took %d steps for %d tokens", w.Steps(), scan.count)
			}
		}
		doc := c.Compile(query)
		for _, op := range doc.Ops {
			_ = op.Measures.Cost.Evaluate(nil)
		}
	})
}
