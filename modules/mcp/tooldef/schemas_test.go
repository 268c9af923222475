package tooldef

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// findBooks uses every kind of variable type and every kind of selection
// the schemas map.
const findBooks = `query FindBooks(
  $filter: BookFilter, $first: Int = 5, $genre: Genre!, $tags: [[String]], $extra: JSON,
  $when: DateTime!, $withAuthor: Boolean = false, $text: String!, "Kinds of result to return." $kinds: [Kind!], $id: ID!
) {
  books(filter: $filter, first: $first) {
    ...BookParts
    author @include(if: $withAuthor) { name }
  }
  recent: books(filter: {genres: [$genre], tags: $tags, extra: $extra, published: {from: $when}}) { id label: title }
  search(text: $text, kinds: $kinds) {
    __typename
    ... on Node { id }
    ... on Book { title pages }
    ... on Magazine { title issue }
  }
  node(id: $id) { __typename id }
}
fragment BookParts on Book { id title genre rating published }
`

const addBook = `mutation AddBook($input: AddBookInput!) { addBook(input: $input) { id title genre } }`

func libraryTools(t testing.TB) (*Tool, *Tool) {
	t.Helper()
	yes := true
	add := entry("AddBook", "mutation", addBook)
	add.Tool = &yes
	set, err := loadLibrary(t, entry("FindBooks", "query", findBooks), add)
	if err != nil {
		t.Fatal(err)
	}
	return set.Tools()[0], set.Tools()[1]
}

func TestLibrarySchemasGolden(t *testing.T) {
	find, add := libraryTools(t)
	golden(t, filepath.Join("library", "find_books.json"), toolJSON(t, find))
	golden(t, filepath.Join("library", "add_book.json"), toolJSON(t, add))
}

// The input schema's rules, checked one by one (the golden file shows them
// all together).
func TestInputSchema(t *testing.T) {
	find, add := libraryTools(t)
	in := find.InputSchema
	if in.Type != "object" || in.Schema != "https://json-schema.org/draft/2020-12/schema" || in.AdditionalProperties == nil || in.AdditionalProperties.Not == nil {
		t.Fatalf("root: %+v", in)
	}
	if !slices.Equal(in.Required, []string{"genre", "when", "text", "id"}) {
		t.Errorf("required %v: want the non-null variables without a default", in.Required)
	}
	p := in.Properties
	if first := p["first"]; !slices.Equal(first.Types, []string{"integer", "null"}) || string(first.Default) != "5" ||
		*first.Minimum != -2147483648 || *first.Maximum != 2147483647 || first.Description != "How many books." {
		t.Errorf("first: %+v", first)
	}
	if g := p["genre"]; g.Type != "string" || !slices.Equal(g.Enum, []any{"FICTION", "NONFICTION", "POETRY"}) ||
		g.Description != "Literary genre. FICTION: Made up. NONFICTION: Not made up. POETRY (deprecated)." {
		t.Errorf("genre: %+v %q", g, g.Description)
	}
	if k := p["kinds"]; !slices.Equal(k.Types, []string{"array", "null"}) || k.Items.Type != "string" || len(k.Items.Enum) != 3 ||
		k.Description != "Kinds of result to return." {
		t.Errorf("kinds (described in the document): %+v", k)
	}
	if tags := p["tags"]; !slices.Equal(tags.Types, []string{"array", "null"}) || !slices.Equal(tags.Items.Types, []string{"array", "null"}) ||
		!slices.Equal(tags.Items.Items.Types, []string{"string", "null"}) {
		t.Errorf("tags: %+v", tags)
	}
	if w := p["when"]; w.Type != "" || len(w.Types) != 5 || slices.Contains(w.Types, "null") || w.Description == "" {
		t.Errorf("when (a non-null custom scalar): %+v", w)
	}
	if x := p["extra"]; x.Type != "" || x.Types != nil || x.Description == "" {
		t.Errorf("extra (a nullable custom scalar): %+v", x)
	}
	if text := p["text"]; text.Type != "string" || text.Description != "Words to look for." {
		t.Errorf("text: %+v", text)
	}
	if w := p["withAuthor"]; !slices.Equal(w.Types, []string{"boolean", "null"}) || string(w.Default) != "false" {
		t.Errorf("withAuthor: %+v", w)
	}

	// A nullable input object: anyOf its $ref and null; the $def is
	// recursive through its own $ref.
	f := p["filter"]
	if len(f.AnyOf) != 2 || f.AnyOf[0].Ref != "#/$defs/BookFilter" || f.AnyOf[1].Type != "null" {
		t.Errorf("filter: %+v", f)
	}
	bf := in.Defs["BookFilter"]
	if bf == nil || bf.Type != "object" || bf.AdditionalProperties == nil || bf.Description != "Which books; all given conditions must hold." {
		t.Fatalf("$defs.BookFilter: %+v", bf)
	}
	if and := bf.Properties["and"]; and.Items.Ref != "#/$defs/BookFilter" || and.Description != "Every filter must match." {
		t.Errorf("BookFilter.and: %+v", and)
	}
	if l := bf.Properties["limit"]; string(l.Default) != "10" || slices.Contains(bf.Required, "limit") {
		t.Errorf("BookFilter.limit: %+v, required %v", l, bf.Required)
	}
	dr := in.Defs["DateRange"]
	if dr == nil || !slices.Equal(dr.Required, []string{"from"}) || string(dr.Properties["inclusive"].Default) != "true" {
		t.Errorf("$defs.DateRange: %+v", dr)
	}

	// A non-null input object is its $ref alone; an enum field's default.
	ai := add.InputSchema
	if ai.Properties["input"].Ref != "#/$defs/AddBookInput" || !slices.Equal(ai.Required, []string{"input"}) {
		t.Errorf("add_book input: %+v", ai.Properties["input"])
	}
	abi := ai.Defs["AddBookInput"]
	if g := abi.Properties["genre"]; string(g.Default) != `"FICTION"` || !slices.Contains(g.Enum, nil) {
		t.Errorf("AddBookInput.genre: %+v", g)
	}
	if r := abi.Properties["rating"]; !slices.Equal(r.Types, []string{"number", "null"}) {
		t.Errorf("AddBookInput.rating: %+v", r)
	}

	// Every generated schema resolves as JSON Schema 2020-12.
	for _, s := range []*jsonschema.Schema{find.InputSchema, add.InputSchema, find.OutputSchema, add.OutputSchema} {
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("resolving: %v", err)
		}
	}
}

func TestOutputSchema(t *testing.T) {
	find, add := libraryTools(t)
	out := find.OutputSchema
	if !slices.Equal(out.Required, []string{"books", "recent", "search", "node"}) {
		t.Fatalf("data: required %v", out.Required)
	}
	book := out.Properties["books"].Items
	if !slices.Equal(book.PropertyOrder, []string{"id", "title", "genre", "rating", "published", "author"}) {
		t.Errorf("books items: fragment and field merged as %v", book.PropertyOrder)
	}
	if slices.Contains(book.Required, "author") || !slices.Contains(book.Required, "id") {
		t.Errorf("books items: required %v (author is under @include)", book.Required)
	}
	if a := book.Properties["author"]; !slices.Equal(a.Types, []string{"object", "null"}) || a.Properties["name"].Type != "string" {
		t.Errorf("books.author: %+v", a)
	}
	if title := book.Properties["title"]; title.Description != "The title as printed." {
		t.Errorf("books.title: description %q", title.Description)
	}
	if p := book.Properties["published"]; p.Type != "" || p.Description == "" {
		t.Errorf("books.published (custom scalar): %+v", p)
	}
	recent := out.Properties["recent"].Items
	if !slices.Equal(recent.PropertyOrder, []string{"id", "label"}) {
		t.Errorf("recent: aliases as keys: %v", recent.PropertyOrder)
	}

	// A union: one shape per possible type, __typename a const.
	search := out.Properties["search"].Items
	if len(search.AnyOf) != 3 {
		t.Fatalf("search items: %+v", search)
	}
	for i, want := range []struct {
		typename string
		keys     []string
	}{
		{"Book", []string{"__typename", "id", "title", "pages"}},
		{"Author", []string{"__typename", "id"}},
		{"Magazine", []string{"__typename", "id", "title", "issue"}},
	} {
		s := search.AnyOf[i]
		if c := s.Properties["__typename"].Const; c == nil || *c != want.typename || !slices.Equal(s.PropertyOrder, want.keys) {
			t.Errorf("search shape %d: %v %v, want %s %v", i, c, s.PropertyOrder, want.typename, want.keys)
		}
	}
	// An interface whose possible types have one shape: one schema, an enum
	// of the type names; nullable.
	node := out.Properties["node"]
	if !slices.Equal(node.Types, []string{"object", "null"}) || !slices.Equal(node.Properties["__typename"].Enum, []any{"Book", "Author", "Magazine"}) {
		t.Errorf("node: %+v", node)
	}

	if add.OutputSchema.Properties["addBook"].Type != "object" {
		t.Errorf("add_book: %+v", add.OutputSchema)
	}
}

// The output schema of the records tools validates a real-shaped answer,
// and refuses one with a missing field.
func TestOutputSchemaValidatesAnswers(t *testing.T) {
	set := recordsTools(t)
	search, _ := set.Lookup("search_bills")
	rs, err := search.OutputSchema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var ok, missing any
	json.Unmarshal([]byte(`{"bills":{"items":[{"id":"hr1-118","congress":118,"type":"hr","number":1,"officialTitle":"T",
		"introducedDate":null,"memberName":"M","memberBioguideId":null,"committeeNames":"","sourceUrl":null}],"nextCursor":null}}`), &ok)
	json.Unmarshal([]byte(`{"bills":{"items":[{"id":"hr1-118"}],"nextCursor":null}}`), &missing)
	if err := rs.Validate(ok); err != nil {
		t.Errorf("a well-formed answer: %v", err)
	}
	if err := rs.Validate(missing); err == nil {
		t.Error("an item without its fields validated")
	}
}
