package view

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/introspect"
)

// FuzzSchemaViewOutsideAsMadeUp holds that, for any document, a name outside
// the view (a field of an unowned family, a type only it reaches) gets the
// answer a made-up name of the same length gets, byte for byte once the name
// is put back (docs/design.md D67), and an introspection operation the
// view answers (docs/design.md D68) answers alike too. The document is a
// template: every "@N@" is replaced by the name.
func FuzzSchemaViewOutsideAsMadeUp(f *testing.F) {
	for _, seed := range []string{
		`{ @N@ { code } }`,
		`{ @N@(where: {level: HIGH}) { code owner { name } } }`,
		`{ bills { id } x: @N@ { code } }`,
		`query Q($w: @N@) { bills { id } }`,
		`{ bills { ...F } } fragment F on @N@ { code }`,
		`{ search(term: "a") { __typename ... on @N@ { code } } }`,
		`{ bills { sponsor { @N@ } } }`,
		`{ bills @tag(kind: A) { id @N@ } }`,
		`mutation { @N@(input: {reason: "x"}) { code } }`,
		`{ __typename @N@ }`,
		`{ __type(name: "@N@") { name kind fields { name } } }`,
		`{ a: __type(name: "Bill") { name } b: __type(name: "@N@") { ...T } } fragment T on __Type { name possibleTypes { name } }`,
		`{ __schema { types { name } } t: __type(name: "@N@") { inputFields { name } enumValues { name } } }`,
	} {
		f.Add(seed)
	}
	s, fams := load(f)
	vs, err := NewViews(s, fams, func(s *document.Schema) *document.Compiler {
		return document.NewCompiler(document.Config{Schema: s, Families: fams, MaxTokens: 1000, LimitArgument: "limit", DefaultListSize: 10})
	})
	if err != nil {
		f.Fatal(err)
	}
	bills := vs.For("bills")
	pairs := [][2]string{
		{"secrets", "zqzqzqz"}, {"members", "zqzqzqz"}, {"flagSecret", "zqzqzqzqzq"},
		{"Secret", "Zqzqzq"}, {"SecretWhere", "Zqzqzqzqzqz"}, {"SecretLevel", "Zqzqzqzqzqz"}, {"FlagInput", "Zqzqzqzqz"},
	}
	f.Fuzz(func(t *testing.T, template string) {
		if len(template) > 2000 || !strings.Contains(template, "@N@") || escapedHole(template) {
			return
		}
		for _, p := range pairs {
			outside, madeUp := p[0], p[1]
			if strings.Contains(template, outside) || strings.Contains(template, madeUp) {
				continue // the name must come only from the template's holes
			}
			got := bills.Compiler.Compile(strings.ReplaceAll(template, "@N@", outside))
			alike := bills.Compiler.Compile(strings.ReplaceAll(template, "@N@", madeUp))
			want := strings.ReplaceAll(string(alike.Refusal), madeUp, outside)
			if string(got.Refusal) != want || (got.Refusal == nil) != (alike.Refusal == nil) {
				t.Fatalf("%s answers\n%s\nmade-up %s answers\n%s", outside, got.Refusal, madeUp, alike.Refusal)
			}
			if got.Refusal != nil {
				continue
			}
			gotData, gotOK := introspectionAnswer(bills, strings.ReplaceAll(template, "@N@", outside))
			madeUpData, madeUpOK := introspectionAnswer(bills, strings.ReplaceAll(template, "@N@", madeUp))
			if gotOK != madeUpOK || gotData != strings.ReplaceAll(madeUpData, madeUp, outside) {
				t.Fatalf("introspection with %s answers\n%s\nwith made-up %s\n%s", outside, gotData, madeUp, madeUpData)
			}
		}
	})
}

// introspectionAnswer is the view's answer to a valid document of one
// operation that selects only introspection at its root, as the guard
// answers it (ok false: not such a document, or no answer).
func introspectionAnswer(v *Compiled, query string) (string, bool) {
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil || len(doc.Operations) != 1 {
		return "", false
	}
	if pos, other := introspect.RootSelections(doc, doc.Operations[0]); pos == nil || other {
		return "", false
	}
	data, err := v.Introspection.Execute(doc, doc.Operations[0], nil)
	if err != nil {
		return "error: " + err.Error(), false
	}
	return string(data), true
}

// escapedHole reports whether a hole of template follows a backslash closely
// enough to be part of a string escape (\f, \uABCD): there the name's first
// letters are escape characters or hex digits, so a parse error's position
// depends on them, for a made-up name as for any other; that tells nothing
// about the view.
func escapedHole(template string) bool {
	for rest := template; ; {
		i := strings.Index(rest, "@N@")
		if i < 0 {
			return false
		}
		if strings.Contains(rest[max(0, i-5):i], `\`) {
			return true
		}
		rest = rest[i+3:]
	}
}
