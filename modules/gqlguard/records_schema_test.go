package gqlguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// The shipped records schema loads, every DESIGN §3.4 family maps to its
// root fields, and a typical bills query passes with its cost and family.
func TestRecordsSchemaBillsQuery(t *testing.T) {
	g := provisioned(t, &Guard{
		Schema: "../../backend/schema/records.graphqls",
		Families: map[string][]string{
			"bills":                {"bills", "bill"},
			"members":              {"members"},
			"regulatory_filings":   {"regulatoryFilings"},
			"federal_budgets":      {"federalBudgets"},
			"lobbying_disclosures": {"lobbyingDisclosures"},
		},
	})
	body := `{"query":"query Bills($n: Int) { bills(input: {congress: 118, limit: $n}) { items { id officialTitle introducedDate } nextCursor } }","variables":{"n":50},"operationName":"Bills"}`
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	repl := caddy.NewReplacer()
	repl.Set("civic.families", "bills,members")
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	next := &recordNext{}
	w := httptest.NewRecorder()
	if err := g.ServeHTTP(w, r, next); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusNoContent || string(next.body) != body {
		t.Fatalf("%d %s", w.Code, w.Body.String())
	}
	for k, want := range map[string]string{"graphql.operation_name": "Bills", "graphql.families": "bills", "graphql.cost": "51"} {
		if got, _ := repl.GetString(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
