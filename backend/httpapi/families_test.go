package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/internal/familyfile"
	"github.com/civicgate/civicgate/modules/contract"
)

// The records API's families are written once, in caddyfile/families.caddy
// (docs/design.md D62): the gateway imports the file, recordsd's map is
// generated from it. These tests keep the generated file current and check
// that the map the server refuses by is the file's.

const familiesFile = "../../caddyfile/families.caddy"

func shippedFamilies(t *testing.T) []familyfile.Family {
	t.Helper()
	src, err := os.ReadFile(familiesFile)
	if err != nil {
		t.Fatal(err)
	}
	families, err := familyfile.Parse(src)
	if err != nil {
		t.Fatalf("%s: %v", familiesFile, err)
	}
	return families
}

// TestFamiliesGenCurrent: families_gen.go is what go generate writes from
// caddyfile/families.caddy today — a family line changed without
// regenerating fails here, not in production as a refusal by one layer only.
func TestFamiliesGenCurrent(t *testing.T) {
	want, err := familyfile.GoSource("httpapi", "caddyfile/families.caddy", shippedFamilies(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("families_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("families_gen.go is not current: run go generate ./backend/httpapi\n--- have\n%s\n--- generated\n%s", got, want)
	}
}

// TestSchemaRootFieldsHaveFamilies: every Query root field of the records
// schema belongs to a family of the file, and the file names no other field:
// a field added to the schema alone would be refused by both layers (fail
// closed) but never served.
func TestSchemaRootFieldsHaveFamilies(t *testing.T) {
	sdl, err := os.ReadFile(filepath.Join("..", "schema", "records.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	schema, gerr := gqlparser.LoadSchema(&ast.Source{Name: "records.graphqls", Input: string(sdl)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	var fields []string
	for _, f := range schema.Query.Fields {
		if !strings.HasPrefix(f.Name, "__") {
			fields = append(fields, f.Name)
		}
	}
	var named []string
	for _, f := range shippedFamilies(t) {
		named = append(named, f.Fields...)
	}
	slices.Sort(fields)
	slices.Sort(named)
	if len(fields) == 0 || !slices.Equal(fields, named) {
		t.Fatalf("the schema's Query fields %v, the family lines' fields %v", fields, named)
	}
	for _, field := range fields {
		if httpapi.RootFamily(field) == "" {
			t.Errorf("root field %s: no family in recordsd", field)
		}
	}
}

// familyProbe is one document per root field, the least that validates.
var familyProbe = map[string]string{
	"bills":               `{ bills { __typename } }`,
	"bill":                `{ bill(id: "hr1-119") { __typename } }`,
	"members":             `{ members { __typename } }`,
	"regulatoryFilings":   `{ regulatoryFilings { __typename } }`,
	"federalBudgets":      `{ federalBudgets(input: {dataset: OUTLAYS}) { __typename } }`,
	"lobbyingDisclosures": `{ lobbyingDisclosures { __typename } }`,
}

// TestRecordsdEntitlesByFamilyFile: the server refuses by the file's map.
// For every root field of every family line, an identity granted every
// other family is refused (403) and one granted only that family is served.
func TestRecordsdEntitlesByFamilyFile(t *testing.T) {
	families := shippedFamilies(t)
	e := newEnv(t, envOpts{})
	for _, fam := range families {
		var others []string
		for _, o := range families {
			if o.Name != fam.Name {
				others = append(others, o.Name)
			}
		}
		for _, field := range fam.Fields {
			t.Run(field, func(t *testing.T) {
				doc, ok := familyProbe[field]
				if !ok {
					t.Fatalf("no probe document for root field %s: add one to familyProbe", field)
				}
				body := []byte(fmt.Sprintf(`{"query":%q}`, doc))
				status, got, _ := e.do(http.MethodPost, "/graphql", body, map[string]string{contract.IdentityHeader: assertion(t, others...)})
				if status != http.StatusForbidden || string(got) != notEntitled {
					t.Errorf("granted %v: %d %s, want 403 %s", others, status, got, notEntitled)
				}
				status, got, _ = e.do(http.MethodPost, "/graphql", body, map[string]string{contract.IdentityHeader: assertion(t, fam.Name)})
				if status != http.StatusOK || strings.Contains(string(got), `"errors"`) {
					t.Errorf("granted %s: %d %s, want 200 without errors", fam.Name, status, got)
				}
			})
		}
	}
}
