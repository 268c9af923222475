package otherbackend

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manifestOperation is one operation of manifest.json (Apollo persisted
// query manifest).
type manifestOperation struct {
	ID, Name, Type, Body string
}

func readManifest(t *testing.T, path string) []manifestOperation {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Format     string
		Operations []manifestOperation
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Format != "apollo-persisted-query-manifest" || len(m.Operations) != 1 {
		t.Fatalf("manifest %s: %+v %v", path, m, err)
	}
	return m.Operations
}

// TestTrustedDocumentsThroughTheGateway: the kiosk tier is trusted_only —
// its trusted document (by documentId "sha256:<hex>") is served, with the
// engine receiving the document's text, and an ad-hoc query is refused at
// the edge; other tiers still send ad-hoc queries.
func TestTrustedDocumentsThroughTheGateway(t *testing.T) {
	g := newGateway(t, keysInFile)
	kiosk, _ := g.issue("branch-kiosk", "kiosk")
	reader, _ := g.issue("city-school", "reader")
	g.start()
	doc := readManifest(t, filepath.Join(g.s.Root, "examples", "other-backend", "manifest.json"))[0]
	const shelf = `{"data":{"books":{"nodes":[{"title":"Middlemarch","author":{"name":"George Eliot"}},{"title":"Silas Marner","author":{"name":"George Eliot"}},{"title":"Beloved","author":{"name":"Toni Morrison"}}]}}}`

	t.Run("trusted document by documentId", func(t *testing.T) {
		r := postJSON(t, g.URL, kiosk, map[string]any{"documentId": "sha256:" + doc.ID})
		if r.Status != 200 || r.Body != shelf {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if op := g.Upstream.lastOperation(); op.Query != doc.Body {
			t.Fatalf("the engine received %q, want the manifest's document", op.Query)
		}
	})
	// The refusal is a GraphQL request error: over application/json 200 with
	// "data":null (as the guard's other refusals), over
	// application/graphql-response+json 400 without data.
	const refusal = `"errors":[{"message":"Only trusted documents are allowed","extensions":{"code":"TRUSTED_DOCUMENT_REQUIRED"}}]}`
	t.Run("ad-hoc query refused for the kiosk", func(t *testing.T) {
		before := g.Upstream.requestCount()
		r := postJSON(t, g.URL, kiosk, map[string]any{"query": `{ books { endCursor } }`})
		if r.Status != 200 || r.Body != `{"data":null,`+refusal {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		req, err := http.NewRequest(http.MethodPost, g.URL, strings.NewReader(`{"query":"{ books { endCursor } }"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/graphql-response+json")
		if r := send(t, req, kiosk); r.Status != 400 || r.Body != `{`+refusal {
			t.Fatalf("graphql-response+json: %d %s", r.Status, r.Body)
		}
		if g.Upstream.requestCount() != before {
			t.Fatal("a refused ad-hoc query reached the engine")
		}
	})
	t.Run("other tiers still send ad-hoc queries", func(t *testing.T) {
		if r := postJSON(t, g.URL, reader, map[string]any{"query": doc.Body}); r.Status != 200 || r.Body != shelf {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}
