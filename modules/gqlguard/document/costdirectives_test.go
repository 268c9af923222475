package document

import (
	"encoding/json"
	"testing"
)

const costDirectivesSchema = `
directive @cost(weight: String!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR
directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION
type Query {
  books(first: Int, last: Int): [Book!]! @listSize(slicingArguments: ["first", "last"], assumedSize: 50)
  expensive: Int @cost(weight: "7")
  fractional: Int @cost(weight: "2.5")
  shelves: [Shelf!]! @listSize(assumedSize: 3)
  search(term: String @cost(weight: "4")): [Book!]!
  page(first: Int): BookPage @listSize(slicingArguments: ["first"], sizedFields: ["items"])
  heavy: Heavy
  plain(limit: Int): [Book!]!
}
type Book { title: String  author: Author @cost(weight: "5") }
type Author { name: String }
type Shelf { name: String }
type Heavy @cost(weight: "10") { x: Int }
type BookPage { items: [Book!]!  total: Int }
`

// TestCostDirectives: the cost of each document under @cost and @listSize
// (costdirectives.go), with default_list_size 25 and limit_argument limit.
func TestCostDirectives(t *testing.T) {
	s, err := ParseSchema("cost.graphqls", costDirectivesSchema)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler(Config{Schema: s, Introspection: true, MaxTokens: 5000, LimitArgument: "limit", DefaultListSize: 25})
	cases := []struct {
		query string
		vars  string
		want  int64
	}{
		{`{ books(first: 2) { title } }`, ``, 2},                         // slicing argument sizes the list
		{`{ books(last: 4) { title } }`, ``, 4},                          // any slicing argument
		{`{ books { title } }`, ``, 50},                                  // assumedSize
		{`{ books(first: 2) { author { name } } }`, ``, 12},              // 2 × (1 + @cost 5 on author)
		{`{ expensive }`, ``, 7},                                         // @cost on a leaf field
		{`{ fractional }`, ``, 3},                                        // a String weight rounds up
		{`{ shelves { name } }`, ``, 3},                                  // assumedSize without slicing
		{`{ search(term: "x") { title } }`, ``, 29},                      // 25 × 1 + argument @cost 4 once
		{`{ search { title } }`, ``, 25},                                 // the argument not given costs nothing
		{`{ page(first: 4) { items { title } total } }`, ``, 5},          // sizedFields: 1 + 4 × 1
		{`{ heavy { x } }`, ``, 10},                                      // @cost on the returned type
		{`{ plain(limit: 3) { title } }`, ``, 3},                         // no directive: limit_argument
		{`{ plain { title } }`, ``, 25},                                  // no directive: default_list_size
		{`query($n: Int) { books(first: $n) { title } }`, `{"n": 6}`, 6}, // a slicing variable
		{`query($n: Int) { books(first: $n) { title } }`, `{}`, 25},      // unset variable: default size
	}
	for _, tc := range cases {
		doc := c.Compile(tc.query)
		if doc.Refusal != nil {
			t.Fatalf("%s: refused: %s", tc.query, doc.Refusal)
		}
		var vars map[string]any
		if tc.vars != "" {
			if err := json.Unmarshal([]byte(tc.vars), &vars); err != nil {
				t.Fatal(err)
			}
		}
		if got := doc.Ops[0].Measures.Cost.Evaluate(vars); got != tc.want {
			t.Errorf("%s %s: cost %d, want %d", tc.query, tc.vars, got, tc.want)
		}
	}
}
