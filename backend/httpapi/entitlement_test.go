package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

const notEntitled = `{"error":"Tier not entitled to this endpoint family"}`

// assertion signs an identity for a caller entitled to families.
func assertion(t *testing.T, families ...string) string {
	t.Helper()
	tok, err := contract.SignIdentity(identitySecret, contract.Caller{KeyID: "key_free", Org: "org1", Tier: "t", Env: "live", Families: families}, time.Now(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestEntitlementsEnforcedBehindTheGateway: recordsd refuses, by itself, root
// fields outside the asserted families (docs/design.md D7: a valid free
// assertion sent straight to recordsd once returned lobbying data). Each
// document is one a guard could be fooled by: fragments shared across
// operations, chains, aliases, inline fragments, directives.
func TestEntitlementsEnforcedBehindTheGateway(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	free := assertion(t, "bills", "members")
	for _, tc := range []struct {
		name, body string
		refused    bool
	}{
		{"direct", `{"query":"{ lobbyingDisclosures(input:{limit:2}) { items { id } } }"}`, true},
		{"fragment shared by two operations", `{"query":"query A { ...F } query B { ...F } fragment F on Query { lobbyingDisclosures(input:{limit:2}) { items { id registrant_name income } } }","operationName":"B"}`, true},
		{"chain", `{"query":"query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { regulatoryFilings(input:{limit:1}) { items { id } } }","operationName":"B"}`, true},
		{"alias", `{"query":"{ bills: federalBudgets(input:{dataset: OUTLAYS, limit:1}) { items { id } } }"}`, true},
		{"inline fragment", `{"query":"{ ... on Query { ... { lobbyingDisclosures { items { id } } } } }"}`, true},
		{"include true", `{"query":"{ bills(input:{limit:1}) { items { id } } lobbyingDisclosures @include(if: true) { items { id } } }"}`, true},
		{"skipped by a variable", `{"query":"query($s: Boolean!) { bills(input:{limit:1}) { items { id } } lobbyingDisclosures @skip(if: $s) { items { id } } }","variables":{"s":true}}`, false},
		{"not skipped by a variable", `{"query":"query($s: Boolean!) { bills(input:{limit:1}) { items { id } } lobbyingDisclosures @skip(if: $s) { items { id } } }","variables":{"s":false}}`, true},
		{"entitled families", `{"query":"query A { ...F } fragment F on Query { bills(input:{limit:1}) { items { id } } m: members(input:{limit:1}) { items { member_id } } __typename }"}`, false},
		{"introspection is free", `{"query":"{ __schema { queryType { name } } __typename }"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := e.do(http.MethodPost, "/graphql", []byte(tc.body), map[string]string{contract.IdentityHeader: free})
			if tc.refused {
				if status != http.StatusForbidden || string(body) != notEntitled {
					t.Fatalf("= %d %s, want 403 %s", status, body, notEntitled)
				}
				return
			}
			if status != http.StatusOK || strings.Contains(string(body), `"errors"`) {
				t.Fatalf("= %d %s, want 200 without errors", status, body)
			}
		})
	}
	// The same documents with every family are served: the refusals above
	// are the entitlement check, not something else about the documents.
	status, body, _ := e.do(http.MethodPost, "/graphql", []byte(`{"query":"query A { ...F } query B { ...F } fragment F on Query { lobbyingDisclosures(input:{limit:2}) { items { id } } }","operationName":"B"}`), nil)
	if status != http.StatusOK || strings.Contains(string(body), `"errors"`) {
		t.Fatalf("paid assertion = %d %s", status, body)
	}
	if !strings.Contains(e.logs.String(), "refused a root field outside the asserted families") {
		t.Fatalf("refusals not logged:\n%s", e.logs.String())
	}
}

// TestBillsEndpointEntitled: GET /bills needs the bills family in the assertion.
func TestBillsEndpointEntitled(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	status, body, _ := e.do(http.MethodGet, "/bills?limit=1", nil, map[string]string{contract.IdentityHeader: assertion(t, "members")})
	if status != http.StatusForbidden || string(body) != notEntitled {
		t.Fatalf("GET /bills without bills = %d %s", status, body)
	}
	status, body, _ = e.do(http.MethodGet, "/bills?limit=1", nil, map[string]string{contract.IdentityHeader: assertion(t, "bills")})
	if status != http.StatusOK {
		t.Fatalf("GET /bills with bills = %d %s", status, body)
	}
	// An assertion without the fam claim (a gateway older than recordsd) owns nothing.
	status, body, _ = e.do(http.MethodGet, "/bills?limit=1", nil, map[string]string{contract.IdentityHeader: assertion(t)})
	if status != http.StatusForbidden || string(body) != notEntitled {
		t.Fatalf("GET /bills with no families = %d %s", status, body)
	}
}
