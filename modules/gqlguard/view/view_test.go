package view

import (
	"slices"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// testSDL has two families that share Person, reach an interface and a union
// that cross into types only one of them otherwise reaches, and input types.
const testSDL = `
directive @tag(kind: TagKind) on FIELD
enum TagKind { A B }
type Query {
  bills(filter: BillFilter): [Bill!]!
  search(term: String!): [SearchHit!]!
  members: [Member!]!
  secrets(where: SecretWhere): [Secret!]!
  orphan: Int
}
type Mutation { flagSecret(input: FlagInput!): Secret }
input BillFilter { status: BillStatus, nested: NestedFilter }
input NestedFilter { from: Date }
scalar Date
enum BillStatus { OPEN CLOSED }
interface Node { id: ID! }
type Bill implements Node { id: ID! sponsor: Person! }
type Member implements Node { id: ID! person: Person! }
type Person { name: String! }
union SearchHit = Bill | Memo
type Memo { text: String! }
type Secret { code: String! owner: Person! }
input SecretWhere { level: SecretLevel }
enum SecretLevel { LOW HIGH }
input FlagInput { reason: String! }
`

func load(t testing.TB) (*document.Schema, analysis.Families) {
	t.Helper()
	s, err := document.ParseSchema("test.graphqls", testSDL)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := analysis.NewFamilies(s.AST, map[string][]string{
		"bills":   {"bills", "search"},
		"members": {"members"},
		"secrets": {"secrets", "Mutation.flagSecret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, fams
}

func owned(fams analysis.Families, names ...string) func(string) bool {
	return func(f string) bool { return slices.Contains(names, f) }
}

func TestBuildReach(t *testing.T) {
	s, fams := load(t)
	v := Build(s.AST, fams.Roots(s.AST, owned(fams, "bills")))
	for _, name := range []string{
		"Bill", "Person", "Node", "SearchHit", "Memo", "BillFilter", "NestedFilter", "Date", "BillStatus",
		"Member",                         // implements Node, which Bill reaches
		"TagKind",                        // a directive's argument type
		"String", "ID", "Int", "Boolean", // built-in scalars
		"__Schema", "__Type",
	} {
		if v.Types[name] == nil {
			t.Errorf("view of bills lacks %s", name)
		}
	}
	for _, name := range []string{"Secret", "SecretWhere", "SecretLevel", "FlagInput"} {
		if v.Types[name] != nil {
			t.Errorf("view of bills holds %s", name)
		}
	}
	var fields []string
	for _, f := range v.Query.Fields {
		fields = append(fields, f.Name)
	}
	if want := []string{"bills", "search", "__schema", "__type"}; !slices.Equal(fields, want) {
		t.Errorf("view Query fields %v, want %v", fields, want)
	}
	if v.Mutation == nil || len(v.Mutation.Fields) != 0 {
		t.Errorf("view Mutation %v, want an empty one", v.Mutation)
	}
	if s.AST.Query.Fields.ForName("secrets") == nil {
		t.Error("Build modified the schema it cut")
	}
	if got := len(v.PossibleTypes["Node"]); got != 2 {
		t.Errorf("Node has %d possible types in the view, want 2", got)
	}
}

// TestBuildShared: a type both families reach is in each view, and a
// type only one reaches is in that one only.
func TestBuildShared(t *testing.T) {
	s, fams := load(t)
	secrets := Build(s.AST, fams.Roots(s.AST, owned(fams, "secrets")))
	members := Build(s.AST, fams.Roots(s.AST, owned(fams, "members")))
	for _, v := range []struct {
		name string
		in   []string
		out  []string
	}{
		{"secrets", []string{"Person", "Secret", "SecretWhere", "SecretLevel", "FlagInput"}, []string{"Bill", "Member", "Node", "Memo", "SearchHit"}},
		{"members", []string{"Person", "Member", "Node", "Bill"}, []string{"Secret", "Memo", "SearchHit", "BillFilter"}},
	} {
		view := secrets
		if v.name == "members" {
			view = members
		}
		for _, n := range v.in {
			if view.Types[n] == nil {
				t.Errorf("view of %s lacks %s", v.name, n)
			}
		}
		for _, n := range v.out {
			if view.Types[n] != nil {
				t.Errorf("view of %s holds %s", v.name, n)
			}
		}
	}
	// Bill reached through Node from members must not bring in the union
	// it is a member of.
	if got := members.Implements["Bill"]; len(got) != 1 || got[0].Name != "Node" {
		t.Errorf("members view: Bill implements %v, want only Node", got)
	}
}

func TestViewsOncePerSet(t *testing.T) {
	s, fams := load(t)
	compiles := 0
	vs, err := NewViews(s, fams, func(s *document.Schema) *document.Compiler {
		compiles++
		return document.NewCompiler(document.Config{Schema: s, Families: fams})
	})
	if err != nil {
		t.Fatal(err)
	}
	a := vs.For("bills, members")
	if b := vs.For("members,bills,unknown"); a != b {
		t.Error("the same family set gave two views")
	}
	if vs.For("") == a || vs.Len() != 2 || compiles != 2 {
		t.Errorf("views %d, compiles %d, want 2 and 2", vs.Len(), compiles)
	}
	if a.Schema.Hash == s.Hash || a.Schema.Hash == vs.For("").Schema.Hash {
		t.Error("a view shares its schema hash: the document cache would mix them")
	}
	if all := vs.For("bills,members,secrets"); all.Full {
		t.Error("a view without the root field in no family is called full")
	}
	if a.Full || !(*Compiled)(nil).Whole() {
		t.Error("Whole is wrong")
	}
}

func TestViewValidates(t *testing.T) {
	s, fams := load(t)
	vs, err := NewViews(s, fams, func(s *document.Schema) *document.Compiler {
		return document.NewCompiler(document.Config{Schema: s, Families: fams, MaxTokens: 1000})
	})
	if err != nil {
		t.Fatal(err)
	}
	bills := vs.For("bills")
	if d := bills.Compiler.Compile(`{ bills(filter:{status:OPEN}) { id sponsor { name } } search(term:"x") { __typename ... on Memo { text } } }`); d.Refusal != nil {
		t.Fatalf("refused in view: %s", d.Refusal)
	}
	outside := bills.Compiler.Compile(`{ secrets { code } }`)
	madeUp := bills.Compiler.Compile(`{ zzzzzzz { code } }`)
	want := string(madeUp.Refusal)
	if got := string(outside.Refusal); got == "" || got != strings.ReplaceAll(want, "zzzzzzz", "secrets") {
		t.Errorf("outside field answers\n%s\nmade-up field answers\n%s", got, want)
	}
}

// TestViewsForAllocatesNothing: once a set's view is built, looking it up
// per request allocates nothing.
func TestViewsForAllocatesNothing(t *testing.T) {
	s, fams := load(t)
	vs, err := NewViews(s, fams, func(s *document.Schema) *document.Compiler {
		return document.NewCompiler(document.Config{Schema: s, Families: fams})
	})
	if err != nil {
		t.Fatal(err)
	}
	owned := "bills, members"
	want := vs.For(owned)
	if n := testing.AllocsPerRun(100, func() {
		if vs.For(owned) != want {
			t.Fatal("another view")
		}
	}); n != 0 {
		t.Errorf("For allocates %v times per call", n)
	}
}
