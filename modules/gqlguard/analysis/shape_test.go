package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

const shapeSDL = `
type Query {
  books(filter: BookFilter, order: Order, first: Int, legacyLimit: Int @deprecated(reason: "use first")): [Book!]!
  node(id: ID!): Node
  search(text: String!): [SearchResult!]!
  oldBooks: [Book!]! @deprecated(reason: "use books")
}
type Mutation { rename(id: ID!, title: String!): Book }
input BookFilter {
  title: String
  tags: [String!]
  orders: [Order!]
  score: Float
  author: AuthorFilter
  oldTag: String @deprecated(reason: "use tags")
}
input AuthorFilter { name: String }
enum Order { NEWEST OLDEST TITLE @deprecated(reason: "use NEWEST") }
interface Node { id: ID! }
type Book implements Node { id: ID! title: String! year(x: Int): Int }
type Author implements Node { id: ID! name: String! }
union SearchResult = Book | Author
`

func loadShape(t *testing.T, query string) (*ast.Schema, *ast.QueryDocument) {
	t.Helper()
	schema := gqlparser.MustLoadSchema(&ast.Source{Name: "shape.graphqls", Input: shapeSDL})
	doc, errs := gqlparser.LoadQueryWithRules(schema, query, rules.NewDefaultRules())
	if len(errs) > 0 {
		t.Fatalf("query does not validate: %v", errs)
	}
	return schema, doc
}

func TestOperationShapeCoordinates(t *testing.T) {
	schema, doc := loadShape(t, `
query Q($n: Int = 7) {
  __typename
  books(filter: {title: "secret title", tags: ["a", "b"], orders: [NEWEST, TITLE], author: {name: "x"}, oldTag: "t"},
        order: OLDEST, first: $n, legacyLimit: 3) { ...B }
  node(id: "1") { id ... on Author { name } }
  search(text: """block""") { __typename ... on Book { year } }
  __schema { types { name } }
}
fragment B on Book { id title }
`)
	s := OperationShape(doc, doc.Operations[0], schema)
	want := []string{
		"Author.name",
		"AuthorFilter.name",
		"Book.id", "Book.title", "Book.year",
		"BookFilter.author", "BookFilter.oldTag", "BookFilter.orders", "BookFilter.tags", "BookFilter.title",
		"Node.id",
		"Order.NEWEST", "Order.OLDEST", "Order.TITLE",
		"Query.books", "Query.books(filter:)", "Query.books(first:)", "Query.books(legacyLimit:)", "Query.books(order:)",
		"Query.node", "Query.node(id:)",
		"Query.search", "Query.search(text:)",
	}
	if !slices.Equal(s.Coordinates, want) {
		t.Errorf("coordinates\n got %q\nwant %q", s.Coordinates, want)
	}
	wantDep := []string{"BookFilter.oldTag", "Order.TITLE", "Query.books(legacyLimit:)"}
	if !slices.Equal(s.Deprecated, wantDep) {
		t.Errorf("deprecated = %q, want %q", s.Deprecated, wantDep)
	}
	if want := []string{"use tags", "use NEWEST", "use first"}; !slices.Equal(s.DeprecationReasons, want) {
		t.Errorf("deprecation reasons = %q, want %q (the order of Deprecated)", s.DeprecationReasons, want)
	}
	if s.Dropped != 0 {
		t.Errorf("dropped = %d", s.Dropped)
	}
}

func TestOperationShapeDeprecatedField(t *testing.T) {
	schema, doc := loadShape(t, `{ oldBooks { id } }`)
	s := OperationShape(doc, doc.Operations[0], schema)
	if !slices.Equal(s.Deprecated, []string{"Query.oldBooks"}) {
		t.Errorf("deprecated = %q", s.Deprecated)
	}
	if got := DeprecatedCoordinates(schema); !slices.Equal(got,
		[]string{"BookFilter.oldTag", "Order.TITLE", "Query.books(legacyLimit:)", "Query.oldBooks"}) {
		t.Errorf("DeprecatedCoordinates = %q", got)
	}
}

// TestOperationShapeDeprecationReasons: a reason left out is the
// specification's default, an explicit null is empty, and a reason is the
// schema's text as written (markup included: whoever shows it escapes it).
// An operation reading nothing deprecated has no reasons.
func TestOperationShapeDeprecationReasons(t *testing.T) {
	schema := gqlparser.MustLoadSchema(&ast.Source{Name: "reasons.graphqls", Input: `
type Query {
  a: Int @deprecated
  b: Int @deprecated(reason: null)
  c: Int @deprecated(reason: "<b>use d</b> & \"e\"")
  d: Int
  e: Int @deprecated(reason: "nul \u0000 here")
}`})
	doc, errs := gqlparser.LoadQueryWithRules(schema, `{ d c b a }`, rules.NewDefaultRules())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s := OperationShape(doc, doc.Operations[0], schema)
	if !slices.Equal(s.Deprecated, []string{"Query.a", "Query.b", "Query.c"}) {
		t.Fatalf("deprecated = %q", s.Deprecated)
	}
	if want := []string{DefaultDeprecationReason, "", `<b>use d</b> & "e"`}; !slices.Equal(s.DeprecationReasons, want) {
		t.Errorf("deprecation reasons = %q, want %q", s.DeprecationReasons, want)
	}
	// PostgreSQL text holds no NUL: the recorded reason has U+FFFD instead,
	// so this schema cannot fail every usage flush (docs/design.md D77).
	doc, _ = gqlparser.LoadQueryWithRules(schema, `{ e }`, rules.NewDefaultRules())
	if s := OperationShape(doc, doc.Operations[0], schema); !slices.Equal(s.DeprecationReasons, []string{"nul \uFFFD here"}) {
		t.Errorf("a reason holding NUL: %q", s.DeprecationReasons)
	}
	doc, _ = gqlparser.LoadQueryWithRules(schema, `{ d }`, rules.NewDefaultRules())
	if s := OperationShape(doc, doc.Operations[0], schema); s.Deprecated != nil || s.DeprecationReasons != nil {
		t.Errorf("an operation reading nothing deprecated: %q, %q", s.Deprecated, s.DeprecationReasons)
	}
}

// Variables' default values are literals of the document: their input
// fields and enum values are coordinates.
func TestOperationShapeVariableDefaults(t *testing.T) {
	schema, doc := loadShape(t, `query($o: Order = TITLE, $f: BookFilter = {oldTag: "x"}) { books(order: $o, filter: $f) { id } }`)
	s := OperationShape(doc, doc.Operations[0], schema)
	if !slices.Equal(s.Deprecated, []string{"BookFilter.oldTag", "Order.TITLE"}) {
		t.Errorf("deprecated = %q", s.Deprecated)
	}
}

func TestOperationShapeOnlyTheSelectedOperation(t *testing.T) {
	schema, doc := loadShape(t, `
query A { books { ...B } }
query C { node(id: "x") { id } }
fragment B on Book { title }
fragment N on Node { id }
query D { node(id: "y") { ...N } }
`)
	a := OperationShape(doc, doc.Operations[0], schema)
	if !slices.Equal(a.Coordinates, []string{"Book.title", "Query.books"}) {
		t.Errorf("A: %q", a.Coordinates)
	}
	if want := `query A{ books { ...B } } fragment B on Book { title }`; compact(a.Normalized) != want {
		t.Errorf("A normalized\n got %s\nwant %s", a.Normalized, want)
	}
	c := OperationShape(doc, doc.Operations[1], schema)
	if strings.Contains(c.Normalized, "fragment") {
		t.Errorf("C spreads no fragment: %s", c.Normalized)
	}
}

// The normalized text holds none of the caller's literal data, keeps what
// validation depends on, and validates against the schema the original
// validated against.
func TestNormalizedDropsLiteralData(t *testing.T) {
	schema, doc := loadShape(t, `
"a description the caller wrote"
query Q($t: String = "default secret", $n: Int = 12345) {
  # a comment
  books(filter: {title: "secret title", tags: ["s1", "s2", "s3"], orders: [NEWEST, NEWEST, TITLE], score: 3.25, author: null},
        order: OLDEST, first: 99) { id year @skip(if: false) }
  rename: node(id: """block secret""") { id }
  search(text: $t) { ... on Book { year(x: $n) @include(if: true) } }
}
`)
	s := OperationShape(doc, doc.Operations[0], schema)
	for _, secret := range []string{"secret", "s1", "12345", "99", "3.25", "description", "comment"} {
		if strings.Contains(s.Normalized, secret) {
			t.Errorf("normalized text holds %q: %s", secret, s.Normalized)
		}
	}
	want := `query Q($t: String = "", $n: Int = 0) { books(filter: {title:"",tags:[""],orders:[NEWEST,TITLE],score:0.0,author:null}, order: OLDEST, first: 0) { id year @skip(if: false) } rename: node(id: "") { id } search(text: $t) { ... on Book { year(x: $n) @include(if: true) } } }`
	if compact(s.Normalized) != want {
		t.Errorf("normalized\n got %s\nwant %s", s.Normalized, want)
	}
	if _, errs := gqlparser.LoadQueryWithRules(schema, s.Normalized, rules.NewDefaultRules()); len(errs) > 0 {
		t.Errorf("normalized text does not validate: %v", errs)
	}
	// The parsed document the compiled operation keeps is unchanged.
	if got := doc.Operations[0].SelectionSet[0].(*ast.Field).Arguments.ForName("first").Value.Raw; got != "99" {
		t.Errorf("the document was modified: first = %s", got)
	}
}

// A document built to name many coordinates keeps MaxCoordinates of them,
// every deprecated one among them, and counts the rest.
func TestOperationShapeCap(t *testing.T) {
	var sdl, sel strings.Builder
	sdl.WriteString("type Query {\n")
	n := MaxCoordinates + 40
	for i := range n {
		fmt.Fprintf(&sdl, "  f%04d: Int\n", i)
		fmt.Fprintf(&sel, " f%04d", i)
	}
	sdl.WriteString("  zlast: Int @deprecated\n}\n")
	schema := gqlparser.MustLoadSchema(&ast.Source{Input: sdl.String()})
	doc, errs := gqlparser.LoadQueryWithRules(schema, "{"+sel.String()+" zlast }", rules.NewDefaultRules())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s := OperationShape(doc, doc.Operations[0], schema)
	if len(s.Coordinates) != MaxCoordinates || s.Dropped != n+1-MaxCoordinates {
		t.Fatalf("kept %d, dropped %d; want %d, %d", len(s.Coordinates), s.Dropped, MaxCoordinates, n+1-MaxCoordinates)
	}
	if !slices.IsSorted(s.Coordinates) || !slices.Contains(s.Coordinates, "Query.zlast") {
		t.Errorf("the deprecated coordinate was dropped or the list is unsorted")
	}
	if !slices.Equal(s.Deprecated, []string{"Query.zlast"}) {
		t.Errorf("deprecated = %q", s.Deprecated)
	}
}

// Names come from the validated document and schema: whatever the request
// sends, a coordinate is made of GraphQL names only, never markup.
func TestOperationShapeNamesOnly(t *testing.T) {
	schema, doc := loadShape(t, `{ books(filter: {title: "<script>alert(1)</script>"}) { title } }`)
	s := OperationShape(doc, doc.Operations[0], schema)
	name := regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*\.[_A-Za-z][_0-9A-Za-z]*(\([_A-Za-z][_0-9A-Za-z]*:\))?$`)
	for _, c := range s.Coordinates {
		if !name.MatchString(c) {
			t.Errorf("coordinate %q is not made of names", c)
		}
	}
	if strings.Contains(s.Normalized, "<") {
		t.Errorf("normalized holds markup: %s", s.Normalized)
	}
	if schema, errs := gqlparser.LoadSchema(&ast.Source{Input: "type Query { `<b>`: Int }"}); errs == nil {
		t.Errorf("a name with markup loaded: %v", schema.Query.Fields)
	}
}

// compact is s with every run of white space one space, for comparison.
func compact(s string) string { return strings.Join(strings.Fields(s), " ") }
