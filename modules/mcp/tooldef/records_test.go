package tooldef

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// The shipped manifest, caddyfile/mcp-tools.json, against the records schema
// and the families of caddyfile/routes.caddy (read from the files: modules/
// imports nothing of backend/).

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

const (
	recordsSchemaPath = "../../../backend/schema/records.graphqls"
	routesPath        = "../../../caddyfile/routes.caddy"
	recordsManifest   = "../../../caddyfile/mcp-tools.json"
)

func recordsSchema(t testing.TB) *ast.Schema {
	t.Helper()
	src, err := os.ReadFile(recordsSchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gqlparser.LoadSchema(&ast.Source{Name: "records.graphqls", Input: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// routeFamilies reads the `family <name> <rootField…>` lines of the
// graphql_guard block of routes.caddy.
func routeFamilies(t testing.TB) map[string][]string {
	t.Helper()
	f, err := os.Open(routesPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[0] == "family" {
			out[fields[1]] = fields[2:]
		}
	}
	if len(out) == 0 {
		t.Fatalf("no family line in %s", routesPath)
	}
	return out
}

func recordsTools(t testing.TB) *ToolSet {
	t.Helper()
	set, err := LoadFile(recordsManifest, Config{Schema: recordsSchema(t), Families: routeFamilies(t)})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// golden compares got with testdata/<name>, or writes it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what was generated:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// toolJSON is what tools/list shows of a tool, indented.
func toolJSON(t *testing.T, tool *Tool) []byte {
	t.Helper()
	raw, err := json.Marshal(tool.MCP)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func TestRecordsManifestTools(t *testing.T) {
	set := recordsTools(t)
	want := map[string]string{
		"search_bills":                "bills",
		"get_bill":                    "bills",
		"list_members":                "members",
		"search_regulatory_filings":   "regulatory_filings",
		"list_budget_lines":           "federal_budgets",
		"search_lobbying_disclosures": "lobbying_disclosures",
	}
	if len(set.Tools()) != len(want) {
		t.Fatalf("%d tools, want %d", len(set.Tools()), len(want))
	}
	for _, tool := range set.Tools() {
		fam, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		if tool.Family != fam {
			t.Errorf("%s: family %s, want %s", tool.Name, tool.Family, fam)
		}
		if tool.MCP.Title == "" || tool.MCP.Description == "" {
			t.Errorf("%s: no title or description", tool.Name)
		}
		golden(t, filepath.Join("records", tool.Name+".json"), toolJSON(t, tool))
	}
}

// Every paged tool takes after and first and returns nextCursor; the one
// that is not paged (get_bill) takes neither.
func TestRecordsPagedTools(t *testing.T) {
	for _, tool := range recordsTools(t).Tools() {
		props := tool.InputSchema.Properties
		_, after := props["after"]
		_, first := props["first"]
		root := tool.OutputSchema.Properties[tool.OutputSchema.PropertyOrder[0]]
		paged := root.Properties["nextCursor"] != nil
		if paged != (after && first) {
			t.Errorf("%s: nextCursor %v, after %v, first %v", tool.Name, paged, after, first)
		}
		if paged {
			if !slices.Contains(root.Required, "nextCursor") || !slices.Equal(root.Properties["nextCursor"].Types, []string{"string", "null"}) {
				t.Errorf("%s: nextCursor is not a required nullable string: %+v", tool.Name, root.Properties["nextCursor"])
			}
			if got := props["first"]; got.Description == "" || got.Maximum == nil || *got.Maximum != maxInt {
				t.Errorf("%s: first is not a described 32-bit integer: %+v", tool.Name, got)
			}
		}
	}
}
