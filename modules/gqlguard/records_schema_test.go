package gqlguard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// The shipped records schema loads, every family of docs/api.md "Tiers and families" maps to its
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

// TestEntitlementStates: an unset placeholder checks nothing (no civic_auth
// in front), a placeholder set to "" owns no family, and a set list is
// enforced.
func TestEntitlementStates(t *testing.T) {
	g := provisioned(t, &Guard{
		Schema:   "../../backend/schema/records.graphqls",
		Families: map[string][]string{"bills": {"bills", "bill"}, "members": {"members"}},
	})
	body := `{"query":"{ bills(input: {limit: 1}) { nextCursor } }"}`
	for _, tc := range []struct {
		name     string
		families *string
		want     int
	}{
		{"unset checks nothing", nil, http.StatusNoContent},
		{"empty owns nothing", new(""), http.StatusForbidden},
		{"other family refused", new("members"), http.StatusForbidden},
		{"owned family admitted", new("members,bills"), http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			repl := caddy.NewReplacer()
			if tc.families != nil {
				repl.Set("civic.families", *tc.families)
			}
			r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
			w := httptest.NewRecorder()
			if err := g.ServeHTTP(w, r, &recordNext{}); err != nil {
				t.Fatal(err)
			}
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body.String())
			}
		})
	}
}

// timeoutReader fails like a connection whose read deadline passed.
type timeoutReader struct{}

func (timeoutReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

// TestBodyReadTimeout: a body the client trickles past the server's read
// timeout is a 408 in the §3.6 errors form, not a 400 "could not be read".
func TestBodyReadTimeout(t *testing.T) {
	g := provisioned(t, &Guard{Schema: "../../backend/schema/records.graphqls"})
	r := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(timeoutReader{}))
	r.Header.Set("Content-Type", "application/json")
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	next := &recordNext{}
	w := httptest.NewRecorder()
	if err := g.ServeHTTP(w, r, next); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusRequestTimeout || w.Body.String() != `{"errors":[{"message":"Request body timed out"}]}` || next.body != nil {
		t.Fatalf("%d %s", w.Code, w.Body.String())
	}
}
