package tooldef_test

import (
	"os"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
	"github.com/civicgate/civicgate/modules/mcp/tooldef"
)

// One file is both the guard's trusted documents and the tool list: the
// guard reads caddyfile/mcp-tools.json (ignoring title, description,
// arguments), and every tool's document is trusted by it, byte for byte.
// (A test-only import: package tooldef itself imports no Caddy, and the
// persisted package does, through its Redis client pool.)
func TestToolManifestIsATrustedDocumentsManifest(t *testing.T) {
	data, err := os.ReadFile("../../../caddyfile/mcp-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := persisted.ParseManifest(data)
	if err != nil {
		t.Fatalf("the guard refuses the tool manifest: %v", err)
	}
	entries, err := tooldef.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Len() != len(entries) {
		t.Errorf("the guard holds %d documents, the manifest %d", m.Len(), len(entries))
	}
	for _, e := range entries {
		if !m.Contains(e.Body) {
			t.Errorf("%s: not a trusted document to the guard", e.Name)
		}
		if body, ok := m.ByID("sha256:" + e.ID); !ok || body != e.Body {
			t.Errorf("%s: not found by its id", e.Name)
		}
	}
}
