package view

import (
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// FuzzSchemaViewOutsideAsMadeUp holds that, for any document, a name outside
// the view (a field of an unowned family, a type only it reaches) gets the
// answer a made-up name of the same length gets, byte for byte once the name
// is put back (docs/design.md D67). The document is a template: every "@N@"
// is replaced by the name.
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
		if len(template) > 2000 || !strings.Contains(template, "@N@") {
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
		}
	})
}
