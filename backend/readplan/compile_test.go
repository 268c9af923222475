package readplan

import (
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/schema"
	"github.com/civicgate/civicgate/backend/store"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

func loadEntry(t *testing.T, query string) *Entry {
	t.Helper()
	s, err := gqlparser.LoadSchema(&ast.Source{Name: schema.FileName, Input: schema.SDL})
	if err != nil {
		t.Fatal(err)
	}
	doc, errs := gqlparser.LoadQueryWithRules(s, query, rules.NewDefaultRules())
	if errs != nil {
		t.Fatalf("%s: %v", query, errs)
	}
	return NewCache(10, 1<<20).Add(query, "", doc, doc.Operations[0])
}

// keys lists a plan's root response keys and, per root, its object's entry keys.
func keys(p *Plan) string {
	var b strings.Builder
	for _, r := range p.roots {
		b.Write(r.key)
		if r.object != nil {
			b.WriteString("{")
			for _, e := range r.object.entries {
				b.Write(e.key)
				if e.items != nil {
					b.WriteString("[")
					for _, ie := range e.items.entries {
						b.Write(ie.key)
					}
					b.WriteString("]")
				}
			}
			b.WriteString("}")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// TestPlansFollowDirectiveValues: one entry keeps a plan per combination of its @skip/@include variables, each
// collected as gqlgen collects (merged keys in first-seen order, a fragment spread once), and none for a
// value that is not a boolean or a directive it does not know.
func TestPlansFollowDirectiveValues(t *testing.T) {
	e := loadEntry(t, `query($a: Boolean!, $b: Boolean = true) {
		bills { items { id @include(if: $a) ...F ...F title: officialTitle } items { number } nextCursor @skip(if: $b) }
		__typename
	} fragment F on Bill { type id }`)
	on := e.Plan(map[string]any{"a": true, "b": false})
	off := e.Plan(map[string]any{"a": false, "b": true})
	if got, want := keys(on), `"bills":{"items":["id":"type":"title":"number":]"nextCursor":} "__typename": `; got != want {
		t.Fatalf("a on, b off:\n got %s\nwant %s", got, want)
	}
	if got, want := keys(off), `"bills":{"items":["type":"id":"title":"number":]} "__typename": `; got != want {
		t.Fatalf("a off, b on:\n got %s\nwant %s", got, want)
	}
	if again := e.Plan(map[string]any{"a": true, "b": false}); again != on {
		t.Fatal("the same directive values compiled a second plan")
	}
	if e.Plan(map[string]any{"a": true, "b": nil}) != nil {
		t.Fatal("a null if compiled")
	}
	if got := on.RootFields(); len(got) != 1 || got[0] != "bills" {
		t.Fatalf("a bills plan reports root fields %v", got)
	}
	cols := store.BillFields(on.roots[0].fields)
	for _, f := range []store.BillField{store.BillID, store.BillType, store.BillOfficialTitle, store.BillNumber} {
		if !cols.Has(f) {
			t.Errorf("column %d not selected", f)
		}
	}
	if cols.Len() != 4 {
		t.Errorf("%d columns selected, want 4", cols.Len())
	}
}

// TestUncoveredOperationsHaveNoPlan: other families, introspection and an operation whose every root is skipped
// are left to gqlgen.
func TestUncoveredOperationsHaveNoPlan(t *testing.T) {
	for _, q := range []string{
		`{ bills { nextCursor } changes: __type(name: "Bill") { name } }`,
		`{ bills { nextCursor } __schema { queryType { name } } }`,
		`{ __schema { queryType { name } } }`,
		`{ bills @skip(if: true) { nextCursor } }`,
	} {
		if p := loadEntry(t, q).Plan(nil); p != nil {
			t.Errorf("%s compiled", q)
		}
	}
}
