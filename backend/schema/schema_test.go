package schema

import (
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestSpecSignatures pins the spec's exact root signatures and field types (docs/api.md "Root fields and filters", "Item types"; docs/design.md D3).
func TestSpecSignatures(t *testing.T) {
	s, err := gqlparser.LoadSchema(&ast.Source{Name: FileName, Input: SDL})
	if err != nil {
		t.Fatal(err)
	}
	roots := map[string][2]string{
		"bills":               {"BillsInput", "BillsPage!"},
		"bill":                {"ID!", "Bill"},
		"members":             {"MembersInput", "MembersPage!"},
		"regulatoryFilings":   {"RegulatoryFilingsInput", "RegulatoryFilingsPage!"},
		"federalBudgets":      {"FederalBudgetsInput!", "FederalBudgetsPage!"},
		"lobbyingDisclosures": {"LobbyingDisclosuresInput", "LobbyingDisclosuresPage!"},
	}
	if len(s.Query.Fields) != len(roots)+2 { // + __schema, __type
		t.Errorf("query has %d fields", len(s.Query.Fields))
	}
	for name, want := range roots {
		f := s.Query.Fields.ForName(name)
		if f == nil || len(f.Arguments) != 1 || f.Arguments[0].Type.String() != want[0] || f.Type.String() != want[1] {
			t.Errorf("%s signature wrong: %+v", name, f)
		}
	}
	fields := map[string]map[string]string{
		"Bill": {"id": "ID!", "congress": "Int!", "type": "String!", "number": "Int!", "officialTitle": "String!",
			"introducedDate": "String", "memberName": "String", "memberBioguideId": "String", "memberByCongressKey": "String",
			"committeeNames": "String!", "sourceUrl": "String", "lastSyncedAt": "String!"},
		"Member":     {"member_id": "ID!", "bioguide_id": "ID!", "name": "String!", "state": "String", "terms": "[MemberTerm!]!"},
		"MemberTerm": {"congress": "Int!", "chamber": "String!", "party": "String"},
		"BillsPage":  {"items": "[Bill!]!", "nextCursor": "String"},
		"RegulatoryFilingsInput": {"agency_id": "String", "agency_name": "String", "type": "RegulatoryFilingType",
			"filing_year": "Int", "filing_period": "RegulatoryFilingPeriod", "rIN": "String", "docket_id": "String", "cursor": "String", "limit": "Int"},
		"FederalBudgetsInput": {"dataset": "FederalBudgetDataset!", "congress": "Int", "fiscal_year": "Int", "month": "String",
			"agency": "String", "bureau_code": "String", "account": "String", "cursor": "String", "limit": "Int"},
		"LobbyingDisclosuresInput": {"registrant_name": "String", "registrant_id": "String", "client_name": "String",
			"client_id": "String", "lobbyist_name": "String", "filing_year": "Int", "filing_period": "LobbyingFilingPeriod",
			"issue_area": "String", "agency_acted_on": "String", "cursor": "String", "limit": "Int"},
	}
	// Members added beyond the spec: each keeps every spec member unchanged and is documented
	// (docs/design.md D29: edition). Nothing else may appear.
	additions := map[string]map[string]string{
		"FederalBudgetsInput": {"edition": "Int"},
	}
	for typ, add := range additions {
		for name, ty := range add {
			if f := s.Types[typ].Fields.ForName(name); f == nil || f.Type.String() != ty {
				t.Errorf("%s.%s: want %s", typ, name, ty)
			}
		}
	}
	for typ, want := range fields {
		def := s.Types[typ]
		if def == nil || len(def.Fields) != len(want)+len(additions[typ]) {
			t.Errorf("%s: %d fields, want %d", typ, len(def.Fields), len(want)+len(additions[typ]))
			continue
		}
		for name, ty := range want {
			if f := def.Fields.ForName(name); f == nil || f.Type.String() != ty {
				t.Errorf("%s.%s: want %s", typ, name, ty)
			}
		}
	}
	for _, p := range []string{"RegulatoryFilingsPage", "FederalBudgetsPage", "LobbyingDisclosuresPage", "MembersPage"} {
		if d := s.Types[p]; d == nil || len(d.Fields) != 2 || d.Fields.ForName("nextCursor").Type.String() != "String" {
			t.Errorf("%s shape wrong", p)
		}
	}
}
