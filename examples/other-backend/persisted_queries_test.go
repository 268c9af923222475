package otherbackend

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestPersistedQueriesThroughTheGateway: Apollo automatic persisted queries
// are resolved by the gateway (the engine has no APQ): an unknown hash is
// answered PersistedQueryNotFound without reaching the engine, hash and
// query register it, and then the hash alone is served — with the engine
// receiving the full query text.
func TestPersistedQueriesThroughTheGateway(t *testing.T) {
	g := newGateway(t, keysInFile)
	reader, _ := g.issue("city-school", "reader")
	g.start()
	const query = `query Authors { authors { name } }`
	sum := sha256.Sum256([]byte(query))
	apq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	const served = `{"data":{"authors":[{"name":"George Eliot"},{"name":"Toni Morrison"},{"name":"Italo Calvino"}]}}`

	before := g.Upstream.requestCount()
	r := postJSON(t, g.URL, reader, map[string]any{"extensions": apq})
	if r.Status != 200 || r.Body != `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}` {
		t.Fatalf("hash only, unknown: %d %s", r.Status, r.Body)
	}
	if g.Upstream.requestCount() != before {
		t.Fatal("an unknown hash reached the engine")
	}

	r = postJSON(t, g.URL, reader, map[string]any{"query": query, "extensions": apq})
	if r.Status != 200 || r.Body != served {
		t.Fatalf("hash and query: %d %s", r.Status, r.Body)
	}

	before = g.Upstream.requestCount()
	r = postJSON(t, g.URL, reader, map[string]any{"extensions": apq})
	if r.Status != 200 || r.Body != served {
		t.Fatalf("hash only, registered: %d %s", r.Status, r.Body)
	}
	if g.Upstream.requestCount() != before+1 {
		t.Fatalf("the engine received %d requests for one", g.Upstream.requestCount()-before)
	}
	if op := g.Upstream.lastOperation(); op.Query != query {
		t.Fatalf("the engine received the document %q, want the full query", op.Query)
	}

	wrong := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(make([]byte, 32))}}
	if r := postJSON(t, g.URL, reader, map[string]any{"query": query, "extensions": wrong}); r.Status == 200 && r.Body == served {
		t.Fatalf("a query registered under a hash that is not its own: %d %s", r.Status, r.Body)
	}
}
