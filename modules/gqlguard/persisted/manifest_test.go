package persisted_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

const (
	bodyQuery        = "query Me { me { id } }"
	bodyMutation     = "mutation Rename($n: String!) { rename(name: $n) { id } }"
	bodySubscription = "subscription Ticks { tick }"
)

func hexOf(body string) string { return persisted.Sum(body).String() }

// writeManifest writes content to a file of its own and returns the path.
func writeManifest(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, content string) *persisted.Manifest {
	t.Helper()
	m, err := persisted.LoadManifest(writeManifest(t, content))
	if err != nil {
		t.Fatalf("LoadManifest: %v", err)
	}
	return m
}

type apolloOp struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Body string `json:"body"`
}

func apolloManifest(t *testing.T, ops ...apolloOp) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"format": "apollo-persisted-query-manifest", "version": 1, "operations": ops})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func plainMap(t *testing.T, m map[string]string) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantTrusted checks every way of reaching body.
func wantTrusted(t *testing.T, m *persisted.Manifest, body string) {
	t.Helper()
	h := persisted.Sum(body)
	for _, id := range []string{"sha256:" + h.String(), h.String(), strings.ToUpper(h.String())} {
		if got, ok := m.ByID(id); !ok || got != body {
			t.Errorf("ByID(%s) = %q, %v", id, got, ok)
		}
	}
	if got, ok := m.ByHash(h); !ok || got != body {
		t.Errorf("ByHash = %q, %v", got, ok)
	}
	if !m.Contains(body) {
		t.Errorf("Contains(%q) = false", body)
	}
}

func TestManifestApollo(t *testing.T) {
	m := load(t, apolloManifest(t,
		apolloOp{hexOf(bodyQuery), "Me", "query", bodyQuery},
		apolloOp{"sha256:" + hexOf(bodyMutation), "Rename", "mutation", bodyMutation},
		apolloOp{strings.ToUpper(hexOf(bodySubscription)), "Ticks", "subscription", bodySubscription},
	))
	if m.Format() != persisted.FormatApollo || m.Len() != 3 || m.Documents() != 3 {
		t.Fatalf("Format %q, Len %d, Documents %d", m.Format(), m.Len(), m.Documents())
	}
	for _, body := range []string{bodyQuery, bodyMutation, bodySubscription} {
		wantTrusted(t, m, body)
	}
	if m.Contains(bodyQuery+" ") || m.Contains("query Me { me { id }}") {
		t.Error("a different text is trusted: the allow-list is byte for byte")
	}
	if _, ok := m.ByID("Me"); ok {
		t.Error("an operation name is not an id")
	}
}

// The generator's own sample shape, unknown members tolerated for forward
// compatibility.
func TestManifestApolloLiteral(t *testing.T) {
	m := load(t, `{
  "format": "apollo-persisted-query-manifest",
  "version": 1,
  "operations": [
    {"id": "`+hexOf(bodyQuery)+`", "name": "Me", "type": "query", "body": "query Me { me { id } }", "extra": true}
  ],
  "generator": "test"
}`)
	wantTrusted(t, m, bodyQuery)
}

func TestManifestApolloEmptyOperations(t *testing.T) {
	m := load(t, `{"format":"apollo-persisted-query-manifest","version":1,"operations":[]}`)
	if m.Len() != 0 || m.Contains(bodyQuery) {
		t.Fatalf("Len %d", m.Len())
	}
}

// GraphQL Codegen's client preset (bare hex ids) and the GraphQL-over-HTTP
// documentId shape (sha256:<hex>), with Relay-style custom ids.
func TestManifestPlainMap(t *testing.T) {
	m := load(t, plainMap(t, map[string]string{
		hexOf(bodyQuery):                   bodyQuery,
		"sha256:" + hexOf(bodyMutation):    bodyMutation,
		"3f2a1c0e9b7d6a5f4e3d2c1b0a9f8e7d": bodySubscription, // Relay: md5-looking custom id
		"Ticks_v2":                         "subscription Ticks2 { tick }",
	}))
	if m.Format() != persisted.FormatPlainMap || m.Len() != 4 || m.Documents() != 4 {
		t.Fatalf("Format %q, Len %d, Documents %d", m.Format(), m.Len(), m.Documents())
	}
	for _, body := range []string{bodyQuery, bodyMutation, bodySubscription} {
		wantTrusted(t, m, body)
	}
	if got, ok := m.ByID("3f2a1c0e9b7d6a5f4e3d2c1b0a9f8e7d"); !ok || got != bodySubscription {
		t.Errorf("ByID(custom) = %q, %v", got, ok)
	}
	if got, ok := m.ByID("Ticks_v2"); !ok || got != "subscription Ticks2 { tick }" {
		t.Errorf("ByID(custom) = %q, %v", got, ok)
	}
	for _, id := range []string{"ticks_v2", "Ticks_v2 ", "sha256:Ticks_v2", "sha256:" + hexOf("{ other }"), ""} {
		if _, ok := m.ByID(id); ok {
			t.Errorf("ByID(%q) found a document", id)
		}
	}
}

// The same document under its bare and its sha256: id is one entry.
func TestManifestPlainMapSameIDTwoSpellings(t *testing.T) {
	m := load(t, `{"`+hexOf(bodyQuery)+`": "query Me { me { id } }", "sha256:`+hexOf(bodyQuery)+`": "query Me { me { id } }"}`)
	if m.Len() != 1 || m.Documents() != 1 {
		t.Fatalf("Len %d, Documents %d", m.Len(), m.Documents())
	}
}

func TestManifestByHashAllocatesNothing(t *testing.T) {
	m := load(t, plainMap(t, map[string]string{hexOf(bodyQuery): bodyQuery}))
	h := persisted.Sum(bodyQuery)
	miss := persisted.Sum("{ other }")
	n := testing.AllocsPerRun(1000, func() {
		_, _ = m.ByHash(h)
		_, _ = m.ByHash(miss)
		_, _ = m.ByID("sha256:" + typenameHex)
	})
	if n != 0 {
		t.Fatalf("ByHash/ByID allocate %v times", n)
	}
}
