package reliability

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// graphql_guard with schema_view entitled (docs/design.md D67) against a
// caller of a low tier (reader: catalog only) probing for the loans family
// of the library engine: hostile documents and a schema-recovery harness in
// the manner of clairvoyance (probe names, read the errors). Nothing outside
// the reader's view may be told apart from a name that does not exist.

// readerView is every name of the library schema the catalog family reaches
// (root types exist in every view, Mutation and Subscription empty).
var readerView = []string{
	"Query", "Mutation", "Subscription", "books", "book", "authors", "first", "after", "id",
	"BookConnection", "nodes", "endCursor", "Book", "title", "author", "Author", "name",
	"Int", "String", "ID", "Boolean", "Float",
}

// madeUpLike is a name of the same length and shape as name that no schema
// holds: same first-letter case, letters z and q.
func madeUpLike(name string) string {
	b := []byte(strings.Repeat("zq", len(name))[:len(name)])
	if name != "" && name[0] >= 'A' && name[0] <= 'Z' {
		b[0] = 'Z'
	}
	return string(b)
}

// schemaWords is the probe word list built from the real schema's names:
// types, fields, arguments and enum values.
func schemaWords(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gqlparser.LoadSchema(&ast.Source{Name: path, Input: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	add := func(w string) {
		if !strings.HasPrefix(w, "__") && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	for name, def := range s.Types {
		if def.BuiltIn {
			continue
		}
		add(name)
		for _, f := range def.Fields {
			add(f.Name)
			for _, a := range f.Arguments {
				add(a.Name)
			}
		}
		for _, v := range def.EnumValues {
			add(v.Name)
		}
	}
	slices.Sort(words)
	return words
}

func TestSchemaViewHostile(t *testing.T) {
	a, keys := startAnyBackend(t, "\t\t\tschema_view entitled", "reader", "partner")
	reader, partner := keys[0], keys[1]
	outside := []string{"loans", "borrowBook", "returnBook", "loanEvents", "Loan", "LoanEvent", "LoanEventKind", "memberId", "BORROWED"}

	// answer sends the document built from template ("@N@" → name) as the
	// key's caller and returns status and body.
	answer := func(key, template, name string) (int, string) {
		return a.post(key, `{"query":`+jsonString(strings.ReplaceAll(template, "@N@", name))+`}`)
	}
	// alike fails unless name answers as a made-up name of its shape.
	alike := func(t *testing.T, template, name string) {
		t.Helper()
		st, body := answer(reader, template, name)
		mst, mbody := answer(reader, template, madeUpLike(name))
		if st != mst || body != strings.ReplaceAll(mbody, madeUpLike(name), name) {
			t.Errorf("%q with %s: %d %s\nwith a made-up name: %d %s", template, name, st, body, mst, mbody)
		}
		for _, o := range outside {
			if !strings.Contains(name, o) && strings.Contains(body, o) {
				t.Errorf("%q with %s: the answer names %s: %s", template, name, o, body)
			}
		}
	}

	t.Run("hostile documents", func(t *testing.T) {
		before := a.Up.requestCount()
		for _, c := range []struct{ template, name string }{
			{`{ book(id: "b1") { ...F } } fragment F on @N@ { id }`, "Loan"},                        // a fragment on an outside type
			{`{ book(id: "b1") { ... on @N@ { id } } }`, "LoanEvent"},                               // an inline fragment on one
			{`{ book(id: "b1") { title } @N@(memberId: "m1") @include(if: true) { id } }`, "loans"}, // directives
			{`{ @N@(memberId: "m1") @skip(if: false) { __typename } }`, "loans"},                    // __typename below it
			{`query Q($k: @N@) { books { endCursor } }`, "LoanEventKind"},                           // a variable of an outside type
			{`query Q($k: [@N@!]) { books { endCursor } }`, "LoanEventKind"},
			{`{ x: @N@(memberId: "m1") { id } y: books { endCursor } }`, "loans"}, // aliases
			{`mutation { @N@(bookId: "b1") { id } }`, "borrowBook"},
			{`mutation { a: @N@(loanId: "l1") { id } }`, "returnBook"},
			{`subscription { @N@ { kind } }`, "loanEvents"},
			{`{ book(id: "b1") { @N@ } }`, "memberId"},
			{`{ __type(name: "@N@") { name fields { name } } }`, "Loan"}, // introspection of an outside type
			{`{ __schema { types { name } } }`, "Loan"},
		} {
			alike(t, c.template, c.name)
		}
		if got := a.Up.requestCount(); got != before {
			t.Errorf("%d refused documents reached the engine", got-before)
		}
	})

	t.Run("schema recovery with the reader's key", func(t *testing.T) {
		probes := []string{
			`{ @N@ }`,
			`mutation { @N@ }`,
			`subscription { @N@ }`,
			`{ book(id: "b1") { @N@ } }`,
			`{ book(id: "b1") { ... on @N@ { __typename } } }`,
			`query Q($v: @N@) { books { endCursor } }`,
			`{ books(@N@: 1) { endCursor } }`,
		}
		var recovered []string
		for _, w := range schemaWords(t, filepath.Join(a.s.Root, "examples", "other-backend", "library.graphqls")) {
			for _, p := range probes {
				st, body := answer(reader, p, w)
				mst, mbody := answer(reader, p, madeUpLike(w))
				if st != mst || body != strings.ReplaceAll(mbody, madeUpLike(w), w) {
					recovered = append(recovered, w)
					break
				}
			}
		}
		for _, w := range recovered {
			if !slices.Contains(readerView, w) {
				t.Errorf("recovered %s, outside the reader's view (recovered: %v)", w, recovered)
			}
		}
		// The harness works: it recovers names of the view.
		for _, w := range []string{"books", "Book", "title", "first"} {
			if !slices.Contains(recovered, w) {
				t.Errorf("the harness did not recover %s of the view (recovered: %v)", w, recovered)
			}
		}
	})

	t.Run("a tier owning loans sees them", func(t *testing.T) {
		st, body := answer(partner, `{ @N@(memberId: "m1") { id } }`, "loans")
		if st != 200 || body != `{"data":{"loans":[]}}` {
			t.Fatalf("partner: %d %s", st, body)
		}
	})

	// Introspection answered from the reader's view (docs/design.md D68).
	t.Run("introspection recovers the view exactly", func(t *testing.T) {
		full, err := os.ReadFile(filepath.Join(a.s.Root, "modules", "gqlguard", "introspect", "testdata", "introspection_query.graphql"))
		if err != nil {
			t.Fatal(err)
		}
		query := `{"query":` + jsonString(string(full)) + `}`
		// Under the example's shipped limits (max_depth 6): an introspection
		// answered from the view meets introspection_max_depth and the list
		// bound instead (docs/design.md D75), and five nested lists do not pass.
		five := `{ __schema { types { interfaces { fields { args { type { enumValues { name } } } } } } } }`
		if st, body := a.post(reader, `{"query":`+jsonString(five)+`}`); st != 200 || !strings.Contains(body, `"Introspection list nesting 5 exceeds the maximum of 3"`) {
			t.Fatalf("five nested lists: %d %s", st, body)
		}
		before := a.Up.requestCount()
		st, body := a.post(reader, query)
		if st != 200 || !strings.HasPrefix(body, `{"data":{"__schema":`) {
			t.Fatalf("IntrospectionQuery: %d %.300s", st, body)
		}
		recovered := introspectedNames(t, body)

		// Every word of the list, by __type: a name outside the view answers
		// byte for byte as a made-up one.
		const byName = `{ __type(name: "@N@") { name fields(includeDeprecated: true) { name args(includeDeprecated: true) { name } } inputFields { name } enumValues(includeDeprecated: true) { name } } }`
		for _, w := range schemaWords(t, filepath.Join(a.s.Root, "examples", "other-backend", "library.graphqls")) {
			st, body := answer(reader, byName, w)
			if st != 200 {
				t.Fatalf("__type(name: %q): %d %s", w, st, body)
			}
			if body == `{"data":{"__type":null}}` {
				continue
			}
			if slices.Contains(outside, w) {
				t.Errorf("__type(name: %q) answers %s", w, body)
			}
			for _, n := range introspectedNames(t, body) {
				if !slices.Contains(recovered, n) {
					recovered = append(recovered, n)
				}
			}
		}
		for _, w := range outside {
			st, body := answer(reader, byName, w)
			mst, mbody := answer(reader, byName, madeUpLike(w))
			if st != mst || body != mbody || body != `{"data":{"__type":null}}` {
				t.Errorf("__type(name: %q): %d %s\nmade-up %q: %d %s", w, st, body, madeUpLike(w), mst, mbody)
			}
		}
		slices.Sort(recovered)
		want := slices.DeleteFunc(slices.Clone(readerView), func(n string) bool { return n == "Mutation" || n == "Subscription" })
		slices.Sort(want)
		if !slices.Equal(recovered, want) {
			t.Errorf("introspection recovered %v\nthe reader's view is %v (its field-less Mutation and Subscription are not answered)", recovered, want)
		}
		if got := a.Up.requestCount(); got != before {
			t.Errorf("%d introspection requests reached the engine", got-before)
		}
	})
	a.alive(reader)
}

// introspectedNames are the names an introspection answer tells: the
// types' names and their fields', arguments', input fields' and enum
// values' names, the introspection system's own (__Type …) and the
// directives (in every schema) left out.
func introspectedNames(t *testing.T, body string) []string {
	t.Helper()
	type named struct {
		Name string `json:"name"`
	}
	type typ struct {
		Name   string `json:"name"`
		Fields []struct {
			Name string  `json:"name"`
			Args []named `json:"args"`
		} `json:"fields"`
		InputFields []named `json:"inputFields"`
		EnumValues  []named `json:"enumValues"`
	}
	var resp struct {
		Data struct {
			Schema *struct {
				Types []typ `json:"types"`
			} `json:"__schema"`
			Type *typ `json:"__type"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("%v: %.300s", err, body)
	}
	var types []typ
	if resp.Data.Schema != nil {
		types = resp.Data.Schema.Types
	}
	if resp.Data.Type != nil {
		types = append(types, *resp.Data.Type)
	}
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, ty := range types {
		if strings.HasPrefix(ty.Name, "__") {
			continue
		}
		add(ty.Name)
		for _, f := range ty.Fields {
			add(f.Name)
			for _, a := range f.Args {
				add(a.Name)
			}
		}
		for _, f := range ty.InputFields {
			add(f.Name)
		}
		for _, v := range ty.EnumValues {
			add(v.Name)
		}
	}
	return names
}
