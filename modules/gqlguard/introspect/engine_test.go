package introspect_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/modules/gqlguard/introspect"
)

// The reference engine: gqlgen's executor, as the library engine of
// examples/other-backend runs it, handed the schema (or view) to introspect
// in place of its own (graphql.Config.Schema). Introspection resolves from
// that *ast.Schema alone, so any SDL can be introspected through it.

func loadSchema(t testing.TB, file string) *ast.Schema {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := gqlparser.LoadSchema(&ast.Source{Name: file, Input: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readQuery(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// engineData is gqlgen's "data" for query over s; it fails the test on
// errors.
func engineData(t *testing.T, s *ast.Schema, query string, vars map[string]any) []byte {
	t.Helper()
	srv := handler.New(library.NewExecutableSchema(library.Config{Schema: s, Resolvers: &library.Resolver{}}))
	srv.AddTransport(transport.POST{})
	srv.Use(extension.Introspection{})
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	var resp struct {
		Data   json.RawMessage `json:"data"`
		Errors json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Errors) > 0 {
		t.Fatalf("engine: %d %s (%v)", rec.Code, rec.Body, err)
	}
	return resp.Data
}

// ourData is this package's "data" for query over s, the document
// validated first as the guard does.
func ourData(t testing.TB, s *ast.Schema, query string, vars map[string]any) []byte {
	t.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		t.Fatal(err)
	}
	if errs := validator.ValidateWithRules(s, doc, rules.NewDefaultRules()); len(errs) > 0 {
		t.Fatalf("validation: %v", errs)
	}
	if len(doc.Operations) != 1 {
		t.Fatalf("%d operations", len(doc.Operations))
	}
	out, err := introspect.New(s).Execute(doc, doc.Operations[0], vars)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// specNulls answers, in gqlgen's tree, null where the specification (and
// graphql-js) does and gqlgen answers an empty list or false: the fields,
// interfaces, possibleTypes, enumValues, inputFields and isOneOf of a
// __Type whose kind has none; and it drops the interfaces gqlgen lists
// among an interface's possibleTypes (an interface implementing it), which
// are object types only in the specification (docs/design.md D68).
func specNulls(v any) any {
	switch t := v.(type) {
	case []any:
		for i := range t {
			t[i] = specNulls(t[i])
		}
	case object:
		kind, _ := t.get("kind")
		k, isType := kind.(string)
		for i, m := range t {
			if isType && !kindHas(k, m.key) {
				t[i].value = nil
				continue
			}
			if list, ok := m.value.([]any); ok && isType && m.key == "possibleTypes" {
				objects := []any{}
				for _, p := range list {
					if o, ok := p.(object); ok {
						if pk, _ := o.get("kind"); pk == "INTERFACE" {
							continue
						}
					}
					objects = append(objects, p)
				}
				m.value = objects
			}
			t[i].value = specNulls(m.value)
		}
	}
	return v
}

// kindHas reports whether a __Type of kind answers member with a value.
func kindHas(kind, member string) bool {
	switch member {
	case "fields", "interfaces":
		return kind == "OBJECT" || kind == "INTERFACE"
	case "possibleTypes":
		return kind == "INTERFACE" || kind == "UNION"
	case "enumValues":
		return kind == "ENUM"
	case "inputFields", "isOneOf":
		return kind == "INPUT_OBJECT"
	}
	return true
}

// sameAsEngine fails unless our answer is gqlgen's, member order included
// (gqlgen's spec deviations aside: specNulls).
func sameAsEngine(t *testing.T, s *ast.Schema, query string, vars map[string]any) []byte {
	t.Helper()
	ours := ourData(t, s, query, vars)
	oursTree, err := decodeOrdered(ours)
	if err != nil {
		t.Fatalf("our answer is not JSON: %v\n%s", err, ours)
	}
	engineTree, err := decodeOrdered(engineData(t, introspect.New(s).Visible(), query, vars))
	if err != nil {
		t.Fatal(err)
	}
	got, want := encodeOrdered(oursTree), encodeOrdered(specNulls(engineTree))
	if !bytes.Equal(got, want) {
		t.Errorf("the answers differ %s", firstDifference(got, want))
	}
	return ours
}

func loadSDL(sdl string) (*ast.Schema, error) {
	return gqlparser.LoadSchema(&ast.Source{Name: "inline.graphqls", Input: sdl})
}
