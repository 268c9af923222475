package introspect_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/civicgate/civicgate/modules/gqlguard/introspect"
	"github.com/civicgate/civicgate/modules/gqlguard/view"
)

// views of catalog.graphqls to introspect besides the whole schema.
var catalogViews = map[string]map[string][]string{
	"books only":        {"Query": {"books"}},
	"search and rotate": {"Query": {"search"}, "Mutation": {"rotate"}},
	"audit":             {"Query": {"audit"}, "Subscription": {"memberJoined"}},
	"nothing":           {},
}

// TestIntrospectionQueryAsEngine: graphql-js's IntrospectionQuery (every
// option on) answers as gqlgen answers it, over a schema with every kind of
// type and over views of it, and over the library of examples/other-backend
// and its reader tier's view.
func TestIntrospectionQueryAsEngine(t *testing.T) {
	query := readQuery(t, "introspection_query.graphql")
	catalog := loadSchema(t, "catalog.graphqls")
	t.Run("whole catalog", func(t *testing.T) { sameAsEngine(t, catalog, query, nil) })
	for name, roots := range catalogViews {
		t.Run("catalog view "+name, func(t *testing.T) {
			v := view.Build(catalog, roots)
			out := sameAsEngine(t, v, query, nil)
			namesWithin(t, v, out)
		})
	}
	lib := loadSchema(t, filepath.Join("..", "..", "..", "..", "examples", "other-backend", "library.graphqls"))
	t.Run("library", func(t *testing.T) { sameAsEngine(t, lib, query, nil) })
	t.Run("library reader view", func(t *testing.T) {
		v := view.Build(lib, map[string][]string{"Query": {"books", "book", "authors"}})
		out := sameAsEngine(t, v, query, nil)
		namesWithin(t, v, out)
		for _, outside := range []string{"Loan", "loans", "memberId", "borrowBook", "LoanEventKind"} {
			if strings.Contains(string(out), `"`+outside+`"`) {
				t.Errorf("the reader's introspection names %s", outside)
			}
		}
	})
}

// namesWithin fails unless every "name" of a type in the answer (every
// object with a kind) is a type of the view s.
func namesWithin(t *testing.T, s *ast.Schema, data []byte) {
	t.Helper()
	tree, err := decodeOrdered(data)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case object:
			if _, isType := v.get("kind"); isType {
				if n, _ := v.get("name"); n != nil {
					if name, _ := n.(string); s.Types[name] == nil {
						t.Errorf("the answer names type %v, outside the view", n)
					}
				}
			}
			for _, m := range v {
				walk(m.value)
			}
		}
	}
	walk(tree)
}

// TestSelectionsAsEngine: aliases, named and inline fragments (on the
// type, on an abstract type, on another type), merged fields, @skip and
// @include with variables and defaults, __typename at every level,
// __type of a missing type.
func TestSelectionsAsEngine(t *testing.T) {
	catalog := loadSchema(t, "catalog.graphqls")
	for _, c := range []struct {
		name  string
		query string
		vars  map[string]any
	}{
		{"aliases and __typename", `{ a: __typename s: __schema { __typename q: queryType { __typename name } } t: __type(name: "Book") { __typename n: name } }`, nil},
		{"__type of a type that is not there", `{ __type(name: "Nope") { name } }`, nil},
		{"__type of a built-in", `{ __type(name: "__Type") { name fields { name args { name defaultValue } } } }`, nil},
		{"merged fields", `{ __type(name: "Book") { name fields { name } fields { type { name } } } __type(name: "Book") { kind } }`, nil},
		{"fragments", `query { ...Root } fragment Root on Query { __type(name: "Kind") { ...T ... on __Type { enumValues { name } } } }
			fragment T on __Type { name kind }`, nil},
		{"skip and include", `query Q($yes: Boolean!, $no: Boolean = false) {
			__type(name: "Book") { name @include(if: $yes) kind @skip(if: $yes) description @include(if: $no)
				... on __Type @skip(if: $no) { fields(includeDeprecated: $yes) { name isDeprecated deprecationReason } } } }`,
			map[string]any{"yes": true}},
		{"variables in arguments", `query Q($n: String!, $d: Boolean = true) { __type(name: $n) { enumValues(includeDeprecated: $d) { name deprecationReason } } }`,
			map[string]any{"n": "Kind"}},
		{"deprecated args and input fields hidden by default", `{ q: __type(name: "Query") { fields { name args { name } } }
			f: __type(name: "SearchFilter") { inputFields { name } isOneOf } }`, nil},
		{"wrappers", `{ __type(name: "BookInput") { inputFields { name type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }`, nil},
		{"specifiedByURL and scalars", `{ d: __type(name: "DateTime") { name specifiedByURL description } s: __type(name: "Secret") { specifiedByURL } }`, nil},
		{"schema description and roots", `{ __schema { description mutationType { name } subscriptionType { fields { name } } } }`, nil},
	} {
		t.Run(c.name, func(t *testing.T) { sameAsEngine(t, catalog, c.query, c.vars) })
	}
}

// TestTypesSortedAndStable: __schema.types and directives are sorted by
// name, and one schema answers byte for byte alike every time.
func TestTypesSortedAndStable(t *testing.T) {
	s := introspect.New(loadSchema(t, "catalog.graphqls"))
	query := `{ __schema { types { name } directives { name } } }`
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Execute(doc, doc.Operations[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := s.Execute(doc, doc.Operations[0], nil)
		if err != nil || string(again) != string(first) {
			t.Fatalf("a second answer differs: %s (%v)", again, err)
		}
	}
	tree, _ := decodeOrdered(first)
	schema, _ := tree.(object).get("__schema")
	for _, list := range []string{"types", "directives"} {
		items, _ := schema.(object).get(list)
		var names []string
		for _, it := range items.([]any) {
			n, _ := it.(object).get("name")
			names = append(names, n.(string))
		}
		if !slices.IsSorted(names) || len(names) < 5 {
			t.Errorf("%s not sorted: %v", list, names)
		}
	}
}

// TestDeprecationReasonDefault: a bare @deprecated answers the directive's
// default reason on every kind of element (graphql-js does; gqlgen only on
// fields).
func TestDeprecationReasonDefault(t *testing.T) {
	s, err := loadSDL(`type Query { a(x: Int @deprecated): Int @deprecated  e: E }
		enum E { A B @deprecated }`)
	if err != nil {
		t.Fatal(err)
	}
	got := string(ourData(t, s, `{ q: __type(name: "Query") { fields(includeDeprecated: true) { deprecationReason args(includeDeprecated: true) { deprecationReason } } }
		e: __type(name: "E") { enumValues(includeDeprecated: true) { deprecationReason } } }`, nil))
	want := `{"q":{"fields":[{"deprecationReason":"No longer supported","args":[{"deprecationReason":"No longer supported"}]},{"deprecationReason":null,"args":[]}]},` +
		`"e":{"enumValues":[{"deprecationReason":null},{"deprecationReason":"No longer supported"}]}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestNotIntrospection: an operation selecting a data field is not
// answered.
func TestNotIntrospection(t *testing.T) {
	s := introspect.New(loadSchema(t, "catalog.graphqls"))
	doc, err := parser.ParseQuery(&ast.Source{Input: `{ __typename members { id } }`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Execute(doc, doc.Operations[0], nil); !errors.Is(err, introspect.ErrNotIntrospection) {
		t.Errorf("got %v", err)
	}
}

// TestRootSelections: the root fields an operation selects, through
// fragments and whatever their directives, without a schema.
func TestRootSelections(t *testing.T) {
	for _, c := range []struct {
		query        string
		introspected bool
		other        bool
	}{
		{`{ __schema { types { name } } }`, true, false},
		{`{ __typename }`, false, false},
		{`{ __typename t: __type(name: "X") { name } }`, true, false},
		{`{ __schema { types { name } } books { id } }`, true, true},
		{`{ ...F } fragment F on Query { __type(name: "A") { name } zzz @skip(if: true) }`, true, true},
		{`{ ... on Query { __schema { __typename } } ... @include(if: false) { loans { id } } }`, true, true},
		{`{ books { id } }`, false, true},
		{`{ ...F } fragment F on Query { ...F __schema { description } }`, true, false},
	} {
		doc, err := parser.ParseQuery(&ast.Source{Input: c.query})
		if err != nil {
			t.Fatal(err)
		}
		pos, other := introspect.RootSelections(doc, doc.Operations[0])
		if (pos != nil) != c.introspected || other != c.other {
			t.Errorf("%s: introspection at %v, other %v", c.query, pos, other)
		}
	}
}

// TestFieldlessRootsNotAnswered: a view without mutations or subscriptions
// answers mutationType and subscriptionType null and lists neither type, as
// a schema without them would.
func TestFieldlessRootsNotAnswered(t *testing.T) {
	v := view.Build(loadSchema(t, "catalog.graphqls"), catalogViews["books only"])
	got := string(ourData(t, v, `{ __schema { mutationType { name } subscriptionType { name } } m: __type(name: "Mutation") { name } s: __type(name: "Subscription") { name } q: __type(name: "Query") { fields { name } } }`, nil))
	want := `{"__schema":{"mutationType":null,"subscriptionType":null},"m":null,"s":null,"q":{"fields":[{"name":"books"}]}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	types := string(ourData(t, v, `{ __schema { types { name } } }`, nil))
	if strings.Contains(types, `"Mutation"`) || strings.Contains(types, `"Subscription"`) || !strings.Contains(types, `"Query"`) {
		t.Errorf("types: %s", types)
	}
}
