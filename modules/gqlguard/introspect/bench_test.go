package introspect_test

import (
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/civicgate/civicgate/modules/gqlguard/introspect"
)

// BenchmarkIntrospectionQuery: graphql-js's IntrospectionQuery over the
// catalog schema, the document parsed once (the guard parses it per
// request; parsing is gqlparser's cost, not this package's).
func BenchmarkIntrospectionQuery(b *testing.B) {
	s := introspect.New(loadSchema(b, "catalog.graphqls"))
	doc, err := parser.ParseQuery(&ast.Source{Input: readQuery(b, "introspection_query.graphql")})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Execute(doc, doc.Operations[0], nil); err != nil {
			b.Fatal(err)
		}
	}
}
