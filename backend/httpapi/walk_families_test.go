package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/backend/store"
)

// TestWalkEveryFamily walks every list field with a small limit over rows with tied and NULL sort keys and
// compares the result with the order SQL gives (docs/api.md "Paging").
func TestWalkEveryFamily(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.exec(`INSERT INTO members (member_id, bioguide_id, name, state)
		SELECT 'M' || lpad(g::text, 6, '0'), 'M' || lpad(g::text, 6, '0'), 'Name ' || (g % 5), 'NC' FROM generate_series(1, 23) g`)
	e.exec(`INSERT INTO member_terms (member_id, congress, chamber) SELECT member_id, 118, 'house' FROM members`)
	e.exec(`INSERT INTO regulatory_filings (id, document_number, type, title, publication_date, filing_year, filing_period)
		SELECT '2025-' || lpad(g::text, 5, '0'), '2025-' || lpad(g::text, 5, '0'), 'RULE', 'T', DATE '2025-01-01' + (g % 4), 2025, 'Q1'
		FROM generate_series(1, 23) g`)
	e.exec(`INSERT INTO federal_budget_lines (id, dataset, fiscal_year, congress, month, agency_name, account_title, amount)
		SELECT 'o' || g, 'OUTLAYS', 2020 + (g % 3), 118, CASE WHEN g % 4 = 0 THEN NULL ELSE '2025-0' || (1 + g % 2) END, 'A', 'B', g
		FROM generate_series(1, 23) g`)
	e.exec(`INSERT INTO lobbying_disclosures (id, filing_type, filing_year, filing_period, registrant_id, registrant_name, client_id, client_name, posted_at)
		SELECT 'l' || lpad(g::text, 3, '0'), 'Q1', 2025, 'Q1', 'r', 'R', 'c', 'C',
		       CASE WHEN g % 5 = 0 THEN NULL ELSE TIMESTAMPTZ '2025-04-01 10:00:00.123456+00' + (g % 3) * interval '1 microsecond' END
		FROM generate_series(1, 23) g`)
	for _, tc := range []struct {
		field, input, idKey, extra, sql string
	}{
		{"members", "MembersInput", "member_id", "", `SELECT member_id FROM members ORDER BY name, member_id`},
		{"regulatoryFilings", "RegulatoryFilingsInput", "id", "", `SELECT id FROM regulatory_filings ORDER BY publication_date DESC, id DESC`},
		{"federalBudgets", "FederalBudgetsInput!", "id", "OUTLAYS", `SELECT id FROM federal_budget_lines ORDER BY fiscal_year DESC, month DESC NULLS LAST, id DESC`},
		{"lobbyingDisclosures", "LobbyingDisclosuresInput", "id", "", `SELECT id FROM lobbying_disclosures ORDER BY posted_at DESC NULLS LAST, id DESC`},
	} {
		t.Run(tc.field, func(t *testing.T) {
			ec := *e
			ec.t = t
			in := map[string]any{"limit": 3}
			if tc.extra != "" {
				in["dataset"] = tc.extra
			}
			var got []string
			for i := 0; ; i++ {
				p := ec.list(tc.field, gqlIDsQuery(tc.field, tc.input, tc.idKey), map[string]any{"in": in})
				got = append(got, ids(p, tc.idKey)...)
				if p.NextCursor == nil {
					break
				}
				if i > 20 {
					t.Fatal("walk did not end")
				}
				in["cursor"] = *p.NextCursor
			}
			want := ec.idsInSQLOrder(tc.sql)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("walk\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestPanicInResolverIs500: a store without a pool panics inside the resolver; the client sees only the
// opaque 500.
func TestPanicInResolverIs500(t *testing.T) {
	codec, _ := cursor.New(cursorSecret)
	logs := &lockedWriter{}
	api, err := httpapi.New(httpapi.Config{Store: store.New(nil, codec), DevInsecureNoIdentity: true, Logger: slogTo(logs)})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/graphql", "/bills"} {
		method, body := http.MethodGet, ""
		if path == "/graphql" {
			method, body = http.MethodPost, `{"query":"{ bills { nextCursor } }"}`
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body)).WithContext(context.Background())
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		api.Handler().ServeHTTP(rec, req)
		if rec.Code != 500 || rec.Body.String() != `{"error":"Internal Server Error"}` {
			t.Fatalf("%s panic = %d %s", path, rec.Code, rec.Body.String())
		}
	}
	if strings.Contains(logs.String(), "goroutine ") {
		t.Fatal("stack trace logged")
	}
	if !strings.Contains(logs.String(), "panic") {
		t.Fatal("panic not logged")
	}
}
