package mcp

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/gqlguard/view"
)

// A tier's tools/list names nothing outside the tier's schema view
// (docs/design.md D67, D68): the tools listed are those of the families it
// owns, and every tool's input and output schema is built from its
// operation alone, so every GraphQL name in them is one the tier can
// also learn by introspection.

// viewWords are the names of a view's types and of their fields, arguments,
// input fields and enum values.
func viewWords(s *ast.Schema) map[string]bool {
	words := map[string]bool{}
	for name, def := range s.Types {
		words[name] = true
		for _, f := range def.Fields {
			words[f.Name] = true
			for _, a := range f.Arguments {
				words[a.Name] = true
			}
		}
		for _, v := range def.EnumValues {
			words[v.Name] = true
		}
	}
	return words
}

// schemaTokens are the identifier-like words of a JSON document: its keys,
// its string values and the words of its descriptions.
func schemaTokens(doc []byte) []string {
	var tokens []string
	isWordRune := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				tokens = append(tokens, k)
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			tokens = append(tokens, strings.FieldsFunc(v, func(r rune) bool { return !isWordRune(r) })...)
		}
	}
	var tree any
	if json.Unmarshal(doc, &tree) == nil {
		walk(tree)
	}
	return tokens
}

func TestToolsListWithinTheTiersView(t *testing.T) {
	src, err := os.ReadFile(librarySchema)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := gqlparser.LoadSchema(&ast.Source{Name: "library.graphqls", Input: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	// The reader tier owns catalog: books book authors (guardFamilies).
	inView := viewWords(view.Build(whole, map[string][]string{"Query": {"books", "book", "authors"}}))
	var outside []string
	for w := range viewWords(whole) {
		if !inView[w] && !strings.HasPrefix(w, "__") {
			outside = append(outside, w)
		}
	}
	slices.Sort(outside)
	if !slices.Contains(outside, "Loan") || !slices.Contains(outside, "memberId") {
		t.Fatalf("the reader's view holds loans: outside is %v", outside)
	}

	g := newGateway(t)
	keys := map[string]string{"reader": g.issue(t, "reader").Key, "partner": g.issue(t, "partner").Key}
	g.start(t, gatewayConfig{})
	listed := func(tier string) (names []string, tokens map[string]bool) {
		cs := g.connect(t, keys[tier], nil)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tokens = map[string]bool{}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			for _, sch := range []any{tool.InputSchema, tool.OutputSchema} {
				b, err := json.Marshal(sch)
				if err != nil {
					t.Fatal(err)
				}
				for _, tok := range schemaTokens(b) {
					tokens[tok] = true
				}
			}
		}
		return names, tokens
	}

	names, tokens := listed("reader")
	if len(names) == 0 {
		t.Fatal("the reader lists no tool")
	}
	for _, w := range outside {
		if tokens[w] {
			t.Errorf("the reader's tools/list names %s, outside its view (tools %v)", w, names)
		}
	}
	// The check can fail: a tier owning loans lists a schema naming memberId.
	if _, partner := listed("partner"); !partner["memberId"] {
		t.Error("the partner's tools/list names no memberId: the token walk finds nothing")
	}
}
