package gqlguard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// recordsSchema is the schema TestRecordsSchemaBillsQuery uses: the
// committed records schema the gateway ships with.
const recordsSchema = "../../backend/schema/records.graphqls"

var recordsFamilies = map[string][]string{
	"bills":                {"bills", "bill"},
	"members":              {"members"},
	"regulatory_filings":   {"regulatoryFilings"},
	"federal_budgets":      {"federalBudgets"},
	"lobbying_disclosures": {"lobbyingDisclosures"},
}

const lobbyingTwoOps = `query A { ...F } query B { ...F } fragment F on Query { lobbyingDisclosures(input:{limit:2}) { items { id registrant_name income } } }`

// guardRequest sends query (with operationName op, "" for none) through g
// with {civic.families} set to families, and returns the response and
// whether the next handler was reached.
func guardRequest(t *testing.T, g *Guard, families, query, op string) (*httptest.ResponseRecorder, *caddy.Replacer, bool) {
	t.Helper()
	body := `{"query":` + jsonString(query)
	if op != "" {
		body += `,"operationName":` + jsonString(op)
	}
	body += "}"
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	repl := caddy.NewReplacer()
	repl.Set("civic.families", families)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	next := &recordNext{}
	w := httptest.NewRecorder()
	if err := g.ServeHTTP(w, r, next); err != nil {
		t.Fatal(err)
	}
	return w, repl, next.body != nil
}

// TestSharedFragmentEntitlementRefused: with the free tier's families, an
// unentitled root field reached through a fragment another operation spread
// first is refused exactly like the same field in a lone operation.
func TestSharedFragmentEntitlementRefused(t *testing.T) {
	g := provisioned(t, &Guard{Schema: recordsSchema, Families: recordsFamilies})
	const free = "bills,members"
	single, _, reached := guardRequest(t, g, free, `{ lobbyingDisclosures(input:{limit:2}) { items { id } } }`, "")
	if single.Code != http.StatusForbidden || single.Body.String() != `{"error":"Tier not entitled to this endpoint family"}` || reached {
		t.Fatalf("single operation: %d %s (forwarded %v)", single.Code, single.Body, reached)
	}
	chain := `query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { regulatoryFilings(input:{limit:2}) { items { id } } }`
	for _, tc := range []struct{ query, op string }{
		{lobbyingTwoOps, "B"},
		{lobbyingTwoOps, "A"},
		{chain, "B"},
		{chain, "A"},
		{`query A { bills { nextCursor } ...F } query B { ... on Query { ...F @include(if: true) } } fragment F on Query { x: lobbyingDisclosures { nextCursor } }`, "B"},
		// Directives are not evaluated (README): refused even where they
		// would remove the field.
		{`{ bills { nextCursor } lobbyingDisclosures @skip(if: true) { nextCursor } }`, ""},
		{`query A { ...F } query B($v: Boolean = true) { bills { nextCursor } ...F @skip(if: $v) } fragment F on Query { lobbyingDisclosures { nextCursor } }`, "B"},
	} {
		w, _, reached := guardRequest(t, g, free, tc.query, tc.op)
		if w.Code != single.Code || w.Body.String() != single.Body.String() || reached {
			t.Errorf("%s (operation %s): %d %s (forwarded %v), want the single operation's %d %s",
				tc.query, tc.op, w.Code, w.Body, reached, single.Code, single.Body)
		}
		if ct := w.Header().Get("Content-Type"); ct != single.Header().Get("Content-Type") {
			t.Errorf("%s: Content-Type %q, want %q", tc.query, ct, single.Header().Get("Content-Type"))
		}
	}
	// An entitled operation of the same document still passes.
	w, repl, reached := guardRequest(t, g, free, `query A { ...F } query B { ...F } query C { bills { nextCursor } } fragment F on Query { lobbyingDisclosures { nextCursor } }`, "C")
	if w.Code != http.StatusNoContent || !reached {
		t.Fatalf("entitled operation C: %d %s", w.Code, w.Body)
	}
	if got, _ := repl.GetString("graphql.families"); got != "bills" {
		t.Errorf("graphql.families = %q, want bills", got)
	}
}

// TestSharedFragmentIntrospectionRefused: with introspection off, __schema
// in a fragment another operation spread first is still refused.
func TestSharedFragmentIntrospectionRefused(t *testing.T) {
	off := false
	g := provisioned(t, &Guard{Schema: recordsSchema, Families: recordsFamilies, Introspection: &off})
	for _, tc := range []struct{ query, op, marker string }{
		{`query A { ...F } query B { ...F } fragment F on Query { __schema { queryType { name } } }`, "B", "__schema"},
		{`query A { bills { nextCursor } ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { t: __type(name: "Bill") { name } }`, "B", "t: __type"},
	} {
		w, _, reached := guardRequest(t, g, "bills,members", tc.query, tc.op)
		want := fmt.Sprintf(`{"data":null,"errors":[{"message":"GraphQL introspection is not allowed","locations":[{"line":1,"column":%d}],"extensions":{"code":"INTROSPECTION_DISABLED"}}]}`,
			strings.Index(tc.query, tc.marker)+1)
		if w.Code != http.StatusOK || w.Body.String() != want || reached {
			t.Errorf("%s: %d %s (forwarded %v), want %s", tc.query, w.Code, w.Body, reached, want)
		}
	}
}

// TestRootFieldsPlaceholder: {graphql.root_fields} lists the selected
// operation's root fields, sorted and distinct, fragments expanded, aliases
// resolved, introspection and __typename left out.
func TestRootFieldsPlaceholder(t *testing.T) {
	g := provisioned(t, &Guard{Schema: recordsSchema, Families: recordsFamilies})
	query := `query A { ...F } query B { b: members { nextCursor } __typename __schema { queryType { name } } ...F bills { nextCursor } } query C { __typename } fragment F on Query { bill(id: "x") { id } ... on Query { bills { nextCursor } } }`
	for op, want := range map[string]struct{ fields, families string }{
		"A": {"bill,bills", "bills"},
		"B": {"bill,bills,members", "bills,members"},
		"C": {"", ""},
	} {
		w, repl, reached := guardRequest(t, g, "bills,members", query, op)
		if w.Code != http.StatusNoContent || !reached {
			t.Fatalf("operation %s: %d %s", op, w.Code, w.Body)
		}
		got, ok := repl.GetString("graphql.root_fields")
		if !ok || got != want.fields {
			t.Errorf("operation %s: graphql.root_fields = %q (set %v), want %q", op, got, ok, want.fields)
		}
		if got, _ := repl.GetString("graphql.families"); got != want.families {
			t.Errorf("operation %s: graphql.families = %q, want %q", op, got, want.families)
		}
	}
}
