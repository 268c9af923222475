package document

import (
	"regexp"
	"testing"
)

// coordinateName is what every shape coordinate looks like: GraphQL names.
var coordinateName = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*\.[_A-Za-z][_0-9A-Za-z]*(\([_A-Za-z][_0-9A-Za-z]*:\))?$`)

// FuzzShapeRevalidates: for every operation of a document the guard
// admits, the normalized text validates against the same schema (the
// replaced literals never change the verdict of a valid document,
// docs/design.md D69), its coordinates are names only, and compiling never
// panics.
func FuzzShapeRevalidates(f *testing.F) {
	for _, s := range []string{
		`{ bills(input: {limit: 10, congress: 118, type: "hr"}) { items { id sponsors { name } } nextCursor } }`,
		`query Q($n: Int = 5, $i: BillsInput) { a: bills(input: {limit: $n}) { items { id } } b: bills(input: $i) { nextCursor } }`,
		`{ regulatoryFilings(input: {type: RULE, filing_period: Q1, agency_name: """block"""}) { nextCursor } }`,
		`{ ...A } fragment A on Query { bills { ...B } } fragment B on BillsPage { nextCursor }`,
		`query A { bills { nextCursor } } query B { members { nextCursor } }`,
		`{ bill(id: 1) { title } __typename }`,
		`{ federalBudgets(input: {dataset: OUTLAYS, fiscal_year: 2024}) { nextCursor } }`,
	} {
		f.Add(s)
	}
	s, err := LoadSchema(testSchema)
	if err != nil {
		f.Fatal(err)
	}
	c := NewCompiler(Config{Schema: s, MaxTokens: 5000, LimitArgument: "limit", DefaultListSize: 25})
	f.Fuzz(func(t *testing.T, query string) {
		doc := c.Compile(query)
		for _, op := range doc.Ops {
			shape := op.Published.Shape
			if shape == nil {
				t.Fatalf("operation %q has no shape", op.Name)
			}
			if errs := Revalidate(s.AST, shape.Normalized); len(errs) > 0 {
				t.Fatalf("normalized text of %q does not validate: %v\n%s", query, errs, shape.Normalized)
			}
			for _, coord := range shape.Coordinates {
				if !coordinateName.MatchString(coord) {
					t.Fatalf("coordinate %q is not made of names", coord)
				}
			}
		}
	})
}
