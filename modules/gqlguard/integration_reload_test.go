package gqlguard

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestSchemaReload edits the schema file and reloads Caddy: a field that was
// unknown is accepted after the reload.
func TestSchemaReload(t *testing.T) {
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "schema.graphqls")
	if err := os.WriteFile(schemaPath, []byte("type Query { a: Int }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startCaddy(t, fmt.Sprintf(`
	route /r {
		graphql_guard {
			schema %s
		}
		%s
	}`, schemaPath, echo))
	body := q("{ a b }")
	_, got := s.do(t, call{path: "/r", body: body})
	want := `{"data":null,"errors":[{"message":"Cannot query field \"b\" on type \"Query\". Did you mean \"a\"?","locations":[{"line":1,"column":5}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`
	if got != want {
		t.Fatalf("before reload: %s", got)
	}
	if err := os.WriteFile(schemaPath, []byte("type Query { a: Int b: Int }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload(t)
	// A kept-alive connection may still be served by the old server for an
	// instant after /load returns; a new connection reaches the new config.
	s.tester.Client.CloseIdleConnections()
	if _, got := s.do(t, call{path: "/r", body: body}); got != forwarded("", "", 0, body) {
		t.Fatalf("after reload: %s", got)
	}
}

// reload POSTs the running config back to /load, forcing a reload.
func reload(t *testing.T) {
	t.Helper()
	if err := tryReload(); err != nil {
		t.Fatal(err)
	}
}

// TestBadSchemaRefusesToStart: a schema that does not parse stops the
// config from loading, with the file and location in the error, and the
// running config stays in place.
func TestBadSchemaRefusesToStart(t *testing.T) {
	s := startCaddy(t, fmt.Sprintf(`
	route /r {
		graphql_guard {
			schema %s
		}
		%s
	}`, testSchemaPath(t), echo))
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "broken.graphqls")
	if err := os.WriteFile(schemaPath, []byte("type Query {\n  a: Int\n  b: \n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%d
	auto_https off
}
http://localhost:%d {
	graphql_guard {
		schema %s
	}
	respond "ok"
}
`, adminPort, testenv.FreePort(t), schemaPath)
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://localhost:%d/load", adminPort), strings.NewReader(config))
	req.Header.Set("Content-Type", "text/caddyfile")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "graphql_guard: GraphQL schema " + schemaPath + ":4:1: Expected Name, found }"
	if resp.StatusCode == 200 || !strings.Contains(string(msg), want) {
		t.Fatalf("load: %d %s\nwant an error containing %q", resp.StatusCode, msg, want)
	}
	body := q("{ bills { nextCursor } }")
	if _, got := s.do(t, call{path: "/r", body: body}); got != forwarded("", "", 1, body) {
		t.Fatalf("previous config no longer serving: %s", got)
	}
}
