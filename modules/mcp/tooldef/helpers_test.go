package tooldef

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// The library schema (testdata/library.graphqls) has every kind of type the
// tool schemas map; its families:
var libraryFamilies = map[string][]string{
	"catalog": {"books", "node", "search"},
	"people":  {"author"},
	"writes":  {"Mutation.addBook", "Mutation.removeBook"},
	"live":    {"bookAdded"},
}

func librarySchema(t testing.TB) *ast.Schema {
	t.Helper()
	src, err := os.ReadFile("testdata/library.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	s, err := gqlparser.LoadSchema(&ast.Source{Name: "library.graphqls", Input: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// entry is a manifest entry with its id computed.
func entry(name, typ, body string) Entry {
	sum := sha256.Sum256([]byte(body))
	return Entry{ID: hex.EncodeToString(sum[:]), Name: name, Type: typ, Body: body}
}

func loadLibrary(t testing.TB, entries ...Entry) (*ToolSet, error) {
	t.Helper()
	return Load(entries, Config{Schema: librarySchema(t), Families: libraryFamilies})
}
