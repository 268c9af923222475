package gqlguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestTrustedDocumentsReload: trusted_only serves only the manifest's
// documents; after the manifest file changes and Caddy reloads, the new
// document is served and the dropped one refused (D23: hot reload with
// caddy reload). A manifest that no longer loads keeps the running config.
func TestTrustedDocumentsReload(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "manifest.json")
	first, second := "{ bills { nextCursor } }", "{ members { nextCursor } }"
	writeManifest(t, manifestPath, first)
	s := startCaddy(t, fmt.Sprintf(`
	route /trusted {
		graphql_guard {
			schema %s
			trusted_documents %s
			trusted_only
		}
		%s
	}`, testSchemaPath(t), manifestPath, echo))
	refused := `{"data":null,"errors":[{"message":"Only trusted documents are allowed","extensions":{"code":"TRUSTED_DOCUMENT_REQUIRED"}}]}`

	if _, got := s.do(t, call{path: "/trusted", body: q(first)}); got != forwarded("", "", 1, q(first)) {
		t.Fatalf("trusted document: %s", got)
	}
	if _, got := s.do(t, call{path: "/trusted", body: q(second)}); got != refused {
		t.Fatalf("ad-hoc document: %s", got)
	}
	byID := `{"documentId":"sha256:` + sha256Hex(second) + `"}`
	if _, got := s.do(t, call{path: "/trusted", body: byID}); got != string(bodyPersistedNotFound) {
		t.Fatalf("unknown documentId: %s", got)
	}

	writeManifest(t, manifestPath, second)
	reload(t)
	s.tester.Client.CloseIdleConnections()
	if _, got := s.do(t, call{path: "/trusted", body: q(first)}); got != refused {
		t.Fatalf("after reload, the dropped document: %s", got)
	}
	if _, got := s.do(t, call{path: "/trusted", body: q(second)}); got != forwarded("", "", 1, q(second)) {
		t.Fatalf("after reload, the new document: %s", got)
	}
	// Served by documentId: the next handler gets the full text instead.
	resp, got := s.do(t, call{path: "/trusted", body: byID})
	want := `{"query":` + jsonString(second) + `}`
	if resp.StatusCode != 200 || got != forwarded("", "", 1, want) {
		t.Fatalf("documentId after reload: %d %s\nwant %s", resp.StatusCode, got, forwarded("", "", 1, want))
	}

	// A manifest whose id is not its body's SHA-256 stops the reload; the
	// running config keeps serving.
	bad := fmt.Sprintf(`{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"%s","name":"Q","type":"query","body":%s}]}`,
		sha256Hex(first), jsonString(second))
	if err := os.WriteFile(manifestPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tryReload(); err == nil {
		t.Fatal("a manifest with a wrong id was accepted")
	}
	if _, got := s.do(t, call{path: "/trusted", body: q(second)}); got != forwarded("", "", 1, q(second)) {
		t.Fatalf("after a refused reload: %s", got)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// writeManifest writes an Apollo persisted query manifest holding docs.
func writeManifest(t *testing.T, path string, docs ...string) {
	t.Helper()
	type op struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Type string `json:"type"`
		Body string `json:"body"`
	}
	m := struct {
		Format     string `json:"format"`
		Version    int    `json:"version"`
		Operations []op   `json:"operations"`
	}{Format: "apollo-persisted-query-manifest", Version: 1}
	for i, d := range docs {
		m.Operations = append(m.Operations, op{ID: sha256Hex(d), Name: fmt.Sprintf("Op%d", i), Type: "query", Body: d})
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// tryReload is reload that returns the refusal instead of failing.
func tryReload() error {
	admin := fmt.Sprintf("http://localhost:%d", adminPort)
	resp, err := http.Get(admin + "/config/")
	if err != nil {
		return err
	}
	cfg, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodPost, admin+"/load", bytes.NewReader(cfg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cache-Control", "must-revalidate")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("reload: %d %s", resp.StatusCode, b)
	}
	return nil
}
