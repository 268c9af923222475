package gqlguard

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// upstream records what reached it behind the guard.
type upstream struct {
	mu       sync.Mutex
	bodies   []string
	rootHdrs []string
}

func startUpstream(t *testing.T) (*upstream, string) {
	t.Helper()
	u := &upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		u.rootHdrs = append(u.rootHdrs, r.Header.Get("X-Guard-Root-Fields"))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{}}`)
	}))
	t.Cleanup(srv.Close)
	return u, strings.TrimPrefix(srv.URL, "http://")
}

func (u *upstream) received() ([]string, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.bodies), slices.Clone(u.rootHdrs)
}

// TestSharedFragmentThroughCaddy: the free tier's families (bills, members)
// published as {civic.families} in front of the guard as civic_auth does,
// the shipped records schema and families, and a real reverse_proxy. An
// unentitled root field in a fragment that an earlier operation also
// spreads is refused with the single-operation refusal, and the upstream
// never sees the request; so is __schema in such a fragment with
// introspection off. An entitled operation goes through with its root
// fields in X-Guard-Root-Fields.
func TestSharedFragmentThroughCaddy(t *testing.T) {
	up, addr := startUpstream(t)
	schema, err := filepath.Abs(recordsSchema)
	if err != nil {
		t.Fatal(err)
	}
	guard := func(path, extra string) string {
		return fmt.Sprintf(`
	route %[1]s {
		map {http.request.header.X-Test-Families} {civic.families} {
			~(.+) "${1}"
		}
		graphql_guard {
			schema %[2]s
			family bills bills bill
			family members members
			family regulatory_filings regulatoryFilings
			family federal_budgets federalBudgets
			family lobbying_disclosures lobbyingDisclosures%[3]s
		}
		reverse_proxy %[4]s {
			header_up X-Guard-Root-Fields {graphql.root_fields}
		}
	}`, path, schema, extra, addr)
	}
	s := startCaddy(t, guard("/v1/graphql", "")+guard("/closed", "\n\t\t\tintrospection off"))
	free := map[string]string{"X-Test-Families": "bills,members"}

	single, singleBody := s.do(t, call{path: "/v1/graphql", headers: free, body: q(`{ lobbyingDisclosures(input:{limit:2}) { items { id } } }`)})
	if single.StatusCode != http.StatusForbidden || singleBody != `{"error":"Tier not entitled to this endpoint family"}` {
		t.Fatalf("single operation: %d %s", single.StatusCode, singleBody)
	}
	chain := `query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { regulatoryFilings(input:{limit:2}) { items { id } } }`
	for _, tc := range []struct{ name, body string }{
		{"fragment shared by two operations, the second selected", `{"query":"query A { ...F } query B { ...F } fragment F on Query { lobbyingDisclosures(input:{limit:2}) { items { id registrant_name income } } }","operationName":"B"}`},
		{"fragment chain, its tail spread by an earlier operation", q(chain, `"operationName":"B"`)},
		{"shared fragment inside an inline fragment, aliased", q(`query A { bills { nextCursor } ...F } query B { ... on Query { ...F @include(if: true) } } fragment F on Query { x: lobbyingDisclosures { nextCursor } }`, `"operationName":"B"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, call{path: "/v1/graphql", headers: free, body: tc.body})
			if resp.StatusCode != single.StatusCode || body != singleBody || resp.Header.Get("Content-Type") != single.Header.Get("Content-Type") {
				t.Fatalf("got %d %q %s, want the single operation's %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body,
					single.StatusCode, single.Header.Get("Content-Type"), singleBody)
			}
		})
	}
	t.Run("introspection in a shared fragment, introspection off", func(t *testing.T) {
		query := `query A { ...F } query B { bills { nextCursor } ...F } fragment F on Query { s: __schema { queryType { name } } }`
		resp, body := s.do(t, call{path: "/closed", headers: free, body: q(query, `"operationName":"B"`)})
		want := fmt.Sprintf(`{"data":null,"errors":[{"message":"GraphQL introspection is not allowed","locations":[{"line":1,"column":%d}],"extensions":{"code":"INTROSPECTION_DISABLED"}}]}`,
			strings.Index(query, "s: __schema")+1)
		if resp.StatusCode != http.StatusOK || body != want {
			t.Fatalf("got %d %s, want 200 %s", resp.StatusCode, body, want)
		}
	})
	if bodies, _ := up.received(); len(bodies) != 0 {
		t.Fatalf("the upstream received refused requests: %q", bodies)
	}

	// Control: the upstream is reachable, an entitled operation of a document
	// sharing the fragment goes through untouched with its root fields.
	ok := q(`query A { ...F } query C { b: members { nextCursor } bills { nextCursor } __typename } fragment F on Query { lobbyingDisclosures { nextCursor } }`, `"operationName":"C"`)
	if resp, body := s.do(t, call{path: "/v1/graphql", headers: free, body: ok}); resp.StatusCode != http.StatusOK || body != `{"data":{}}` {
		t.Fatalf("entitled operation: %d %s", resp.StatusCode, body)
	}
	bodies, roots := up.received()
	if len(bodies) != 1 || bodies[0] != ok || roots[0] != "bills,members" {
		t.Fatalf("upstream received %q with X-Guard-Root-Fields %q, want %q with %q", bodies, roots, ok, "bills,members")
	}
}
