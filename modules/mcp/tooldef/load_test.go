package tooldef

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
)

func TestLoadRefusals(t *testing.T) {
	yes := true
	mutation := func(name, body string) Entry {
		e := entry(name, "mutation", body)
		e.Tool = &yes
		return e
	}
	described := entry("Described", "query", `query Described($id: ID!) { node(id: $id) { id } }`)
	described.Arguments = map[string]string{"ident": "no such variable"}
	for name, tc := range map[string]struct {
		e    Entry
		want string
	}{
		"parse error":       {entry("Broken", "query", `query Broken { books { id }`), "does not compile against the schema"},
		"unknown field":     {entry("Unknown", "query", `query Unknown { books { isbn } }`), `Cannot query field "isbn" on type "Book"`},
		"int over 32 bits":  {entry("Big", "query", `query Big { books(first: 3000000000) { id } }`), "does not compile against the schema"},
		"name not in body":  {entry("Other", "query", `query Books { books { id } }`), `Unknown operation named "Other"`},
		"type mismatch":     {mutation("AddBook", `query AddBook { books { id } }`), "the operation is a query, the entry says mutation"},
		"two families":      {entry("Both", "query", `query Both($id: ID!) { books { id } author(id: $id) { name } }`), "exactly one family; the operation's root fields are in 2 (catalog, people)"},
		"orphan root field": {entry("Stats", "query", `query Stats { books { id } stats }`), "a root field of the operation is in no family"},
		"no family at all":  {entry("Typename", "query", `query Typename { __typename }`), "exactly one family; the operation's root fields are in 0"},
		"unknown argument":  {described, `"arguments" describes "ident", which is not a variable of the operation`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadLibrary(t, tc.e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), `operation "`+tc.e.Name+`"`) {
				t.Errorf("the error does not name the operation: %v", err)
			}
		})
	}
}

func TestLoadConfigRefusals(t *testing.T) {
	e := entry("Books", "query", `query Books { books { id } }`)
	if _, err := Load([]Entry{e}, Config{}); err == nil {
		t.Error("no schema: loaded")
	}
	_, err := Load([]Entry{e}, Config{Schema: librarySchema(t), Families: map[string][]string{"a": {"books"}, "b": {"books"}}})
	if err == nil || !strings.Contains(err.Error(), "is in families a and b") {
		t.Errorf("a root field in two families: %v", err)
	}
}

// Only queries are tools unless the entry says otherwise; entries that are
// not tools are not compiled here (the guard checks its trusted documents).
func TestLoadWhichEntriesAreTools(t *testing.T) {
	yes, no := true, false
	add := entry("AddBook", "mutation", `mutation AddBook($input: AddBookInput!) { addBook(input: $input) { id } }`)
	add.Tool = &yes
	remove := entry("RemoveBook", "mutation", `mutation RemoveBook($id: ID!) { removeBook(id: $id) }`)
	hidden := entry("Hidden", "query", `query Hidden { books { id } }`)
	hidden.Tool = &no
	live := entry("Live", "subscription", `subscription Live { bookAdded { id } }`)
	broken := entry("Broken", "query", `query Broken { nonsense }`)
	broken.Tool = &no
	set, err := loadLibrary(t, add, remove, hidden, live, broken, entry("Books", "query", `query Books { books { id } }`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range set.Tools() {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "add_book,books" {
		t.Fatalf("tools %v, want add_book,books", names)
	}
	addTool, _ := set.Lookup("add_book")
	if addTool.OperationType != ast.Mutation || addTool.Family != "writes" || addTool.MCP.Annotations.ReadOnlyHint || addTool.MCP.Annotations.IdempotentHint {
		t.Errorf("add_book: %s, family %s, annotations %+v", addTool.OperationType, addTool.Family, addTool.MCP.Annotations)
	}
	books, _ := set.Lookup("books")
	if !books.MCP.Annotations.ReadOnlyHint || !books.MCP.Annotations.IdempotentHint {
		t.Errorf("books: annotations %+v", books.MCP.Annotations)
	}
}

// A tool without a manifest description is described by its root fields'
// schema descriptions; the manifest's wins when given. The document id is
// sha256:<lower-case hex> whatever the manifest's spelling.
func TestLoadDescriptionsAndIDs(t *testing.T) {
	plain := entry("Books", "query", `query Books { books { id } search(text: "x") { __typename } }`)
	plain.ID = strings.ToUpper(plain.ID)
	described := entry("Node", "query", `query Node($id: ID!) { node(id: $id) { id } }`)
	described.Description = "One thing by id."
	described.Title = "Node"
	set, err := loadLibrary(t, plain, described)
	if err != nil {
		t.Fatal(err)
	}
	books, node := set.Tools()[0], set.Tools()[1]
	if got := books.MCP.Description; got != "Books matching a filter. Books, authors and magazines matching a text." {
		t.Errorf("books: description %q", got)
	}
	if books.DocumentID != "sha256:"+strings.ToLower(plain.ID) {
		t.Errorf("books: document id %s", books.DocumentID)
	}
	if node.MCP.Description != "One thing by id." || node.MCP.Title != "Node" {
		t.Errorf("node: %q %q", node.MCP.Title, node.MCP.Description)
	}
}
