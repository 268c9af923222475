package introspect_test

import (
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/civicgate/civicgate/modules/gqlguard/introspect"
)

func TestListNesting(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  int
	}{
		{`{ __typename }`, 0},
		{`{ __type(name: "Book") { name ofType { ofType { ofType { name } } } } }`, 0},
		{`{ __schema { types { name } } }`, 1},
		{`{ __schema { types { fields { args { name } } } } }`, 3},
		{`{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }`, 4},
		{`{ __schema { types { ...T } } } fragment T on __Type { fields { ...F } } fragment F on __Field { args { name } type { name } }`, 3},
		{`{ __schema { types { ... on __Type { interfaces { possibleTypes { enumValues { name } } } } } } }`, 4},
		{`{ a: __schema { directives { name } } b: __schema { types { inputFields { name } } } }`, 2},
	} {
		doc, err := parser.ParseQuery(&ast.Source{Input: tc.query})
		if err != nil {
			t.Fatal(err)
		}
		if got := introspect.ListNesting(doc, doc.Operations[0]); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.query, got, tc.want)
		}
	}
}

// TestListNestingOfIntrospectionQuery: graphql-js's query, which every
// client sends, is within the guard's bound of 3.
func TestListNestingOfIntrospectionQuery(t *testing.T) {
	doc, err := parser.ParseQuery(&ast.Source{Input: readQuery(t, "introspection_query.graphql")})
	if err != nil {
		t.Fatal(err)
	}
	if got := introspect.ListNesting(doc, doc.Operations[0]); got != 3 {
		t.Fatalf("IntrospectionQuery nests %d lists, want 3", got)
	}
}
