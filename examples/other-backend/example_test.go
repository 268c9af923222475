// Package otherbackend tests docs/other-backend.md's worked example: the civicgate
// modules in front of a GraphQL backend that is not recordsd — the library
// engine of library/, with mutations and subscriptions — configured only
// through examples/other-backend/Caddyfile (keys file or PostgreSQL,
// in-memory limits, the backend's own schema and families, persisted and
// trusted documents), run as the real binary (gateway_harness_test.go).
package otherbackend

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

func TestLibraryBehindCivicgate(t *testing.T) {
	g := newGateway(t, keysInFile)
	reader, _ := g.issue("city-school", "reader")
	partner, _ := g.issue("county-archive", "partner")
	g.start()
	post := func(key, query string) response {
		t.Helper()
		return postJSON(t, g.URL, key, map[string]string{"query": query})
	}

	t.Run("entitled query reaches the backend with an identity, not the key", func(t *testing.T) {
		before := g.Upstream.requestCount()
		r := post(reader, `{ books(first: 5) { nodes { title author { name } } } }`)
		if r.Status != 200 || r.Body != `{"data":{"books":{"nodes":[{"title":"Middlemarch","author":{"name":"George Eliot"}},{"title":"Silas Marner","author":{"name":"George Eliot"}},{"title":"Beloved","author":{"name":"Toni Morrison"}},{"title":"Invisible Cities","author":{"name":"Italo Calvino"}}]}}}` ||
			g.Upstream.requestCount() != before+1 {
			t.Fatalf("%d %s (upstream saw %d new)", r.Status, r.Body, g.Upstream.requestCount()-before)
		}
		got := g.Upstream.lastRequest()
		if got.Header.Get("Authorization") != "" {
			t.Fatal("Authorization forwarded upstream")
		}
		claims, err := contract.VerifyIdentity(g.Secret, got.Header.Get("X-Civic-Identity"), time.Now())
		if err != nil || claims.Tier != "reader" {
			t.Fatalf("identity %+v %v", claims, err)
		}
	})
	for _, tc := range []struct {
		name, key, query string
		status           int
		body             string
	}{
		{"family outside the tier", reader, `{ loans(memberId: "m1") { due } }`, 200,
			`{"data":null,"errors":[{"message":"Cannot query field \"loans\" on type \"Query\".","locations":[{"line":1,"column":3}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{"no key", "", `{ books { endCursor } }`, 401, `{"error":"Missing bearer token"}`},
		{"unknown mutation refused at the edge", partner, `mutation { addBook }`, 200, ""},
		{"unknown field refused at the edge", partner, `{ books { nodes { isbn } } }`, 200, ""},
		{"too deep", partner, `{ authors { books { author { books { author { books { title } } } } } } }`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.Upstream.requestCount()
			r := post(tc.key, tc.query)
			if r.Status != tc.status || (tc.body != "" && r.Body != tc.body) || (tc.body == "" && !strings.HasPrefix(r.Body, `{"data":null,"errors":[`)) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if g.Upstream.requestCount() != before {
				t.Fatal("a refused request reached the backend")
			}
		})
	}
	t.Run("partner owns loans", func(t *testing.T) {
		if r := post(partner, `{ loans(memberId: "m1") { due } }`); r.Status != 200 || r.Body != `{"data":{"loans":[]}}` {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("reader limited to 60/m", func(t *testing.T) {
		var r response
		for i := 0; i < 61 && r.Status != http.StatusTooManyRequests; i++ {
			r = post(reader, `{ books { endCursor } }`)
		}
		if r.Status != http.StatusTooManyRequests || r.Body != `{"error":"Rate limit exceeded"}` || r.Header.Get("Retry-After") == "" {
			t.Fatalf("%d %s %v", r.Status, r.Body, r.Header)
		}
	})
	t.Run("backend down is a JSON 502", func(t *testing.T) {
		g.Backend.Close()
		if r := post(partner, `{ books { endCursor } }`); r.Status != 502 || r.Body != `{"error":"Bad Gateway"}` {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}
