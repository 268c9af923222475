package httpapi_test

import (
	"reflect"
	"testing"
)

func TestEveryFilterOfEveryFamily(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	type tc struct {
		name  string
		field string
		input string
		idKey string
		in    map[string]any
		want  []string // in order
	}
	bills := func(name string, in map[string]any, want ...string) tc {
		return tc{name, "bills", "BillsInput", "id", in, want}
	}
	members := func(name string, in map[string]any, want ...string) tc {
		return tc{name, "members", "MembersInput", "member_id", in, want}
	}
	reg := func(name string, in map[string]any, want ...string) tc {
		return tc{name, "regulatoryFilings", "RegulatoryFilingsInput", "id", in, want}
	}
	bud := func(name string, in map[string]any, want ...string) tc {
		return tc{name, "federalBudgets", "FederalBudgetsInput!", "id", in, want}
	}
	lob := func(name string, in map[string]any, want ...string) tc {
		return tc{name, "lobbyingDisclosures", "LobbyingDisclosuresInput", "id", in, want}
	}
	const l1, l2 = "1f0c8b6e-0000-4000-8000-000000000001", "1f0c8b6e-0000-4000-8000-000000000002"
	cases := []tc{
		bills("all newest first, null date last, deleted excluded", nil, "hr2882-118", "s12-117", "hres5-118"),
		bills("congress", map[string]any{"congress": 117}, "s12-117"),
		bills("type", map[string]any{"type": "hres"}, "hres5-118"),
		bills("type as Congress.gov spells it", map[string]any{"type": "HRES"}, "hres5-118"),
		bills("congress+type", map[string]any{"congress": 118, "type": "hr"}, "hr2882-118"),
		bills("q title word (stemmed)", map[string]any{"q": "veteran"}, "s12-117"),
		bills("q sponsor", map[string]any{"q": "Connolly"}, "hr2882-118"),
		bills("q committee", map[string]any{"q": "rules committee"}, "hres5-118"),
		bills("q H.R. 2882", map[string]any{"q": "H.R. 2882"}, "hr2882-118"),
		bills("q HR 2882", map[string]any{"q": "HR 2882"}, "hr2882-118"),
		bills("q hr2882", map[string]any{"q": "hr2882"}, "hr2882-118"),
		bills("q no match", map[string]any{"q": "spaceport"}),
		members("all by name", nil, "A000370", "S000148", "B001230"),
		members("state", map[string]any{"state": "WI"}, "B001230"),
		members("state lower-case", map[string]any{"state": "wi"}, "B001230"),
		members("chamber", map[string]any{"chamber": "senate"}, "S000148", "B001230"),
		members("chamber any case", map[string]any{"chamber": "Senate"}, "S000148", "B001230"),
		members("congress+chamber any case", map[string]any{"congress": 118, "chamber": "HOUSE"}, "A000370"),
		members("congress", map[string]any{"congress": 118}, "A000370", "B001230"),
		members("congress+chamber in one term", map[string]any{"congress": 118, "chamber": "house"}, "A000370"),
		members("congress+chamber never in one term", map[string]any{"congress": 112, "chamber": "senate"}),
		reg("all newest first", nil, "2026-02822", "2025-11001"),
		reg("agency_id first agency", map[string]any{"agency_id": "145"}, "2026-02822"),
		reg("agency_id second agency", map[string]any{"agency_id": "456"}, "2025-11001"),
		reg("agency_name substring any agency, case-insensitive", map[string]any{"agency_name": "forest SERV"}, "2025-11001"),
		reg("agency_name no match", map[string]any{"agency_name": "treasury"}),
		reg("type", map[string]any{"type": "NOTICE"}, "2025-11001"),
		reg("filing_year", map[string]any{"filing_year": 2026}, "2026-02822"),
		reg("filing_period", map[string]any{"filing_period": "Q2"}, "2025-11001"),
		reg("rIN", map[string]any{"rIN": "2060-AV12"}, "2026-02822"),
		reg("rIN not a substring match", map[string]any{"rIN": "2060"}),
		reg("rIN any case", map[string]any{"rIN": "2060-av12"}, "2026-02822"),
		reg("docket_id", map[string]any{"docket_id": "USDA-2025-0007"}, "2025-11001"),
		reg("docket_id any case", map[string]any{"docket_id": "usda-2025-0007"}, "2025-11001"),
		reg("docket_id not a substring match", map[string]any{"docket_id": "USDA-2025"}),
		bud("appropriations newest fiscal year first", map[string]any{"dataset": "APPROPRIATIONS"}, "app-2025-001-05-0100", "app-2024-007-10-1234"),
		bud("outlays", map[string]any{"dataset": "OUTLAYS"}, "out-2026-01-senate", "out-2025-03-justice"),
		bud("congress", map[string]any{"dataset": "OUTLAYS", "congress": 119}, "out-2026-01-senate"),
		bud("fiscal_year", map[string]any{"dataset": "APPROPRIATIONS", "fiscal_year": 2024}, "app-2024-007-10-1234"),
		bud("month", map[string]any{"dataset": "OUTLAYS", "month": "2025-03"}, "out-2025-03-justice"),
		bud("agency substring", map[string]any{"dataset": "APPROPRIATIONS", "agency": "defense--MILITARY"}, "app-2024-007-10-1234"),
		bud("agency wildcard is literal", map[string]any{"dataset": "APPROPRIATIONS", "agency": "%"}),
		bud("bureau_code", map[string]any{"dataset": "APPROPRIATIONS", "bureau_code": "05"}, "app-2025-001-05-0100"),
		bud("account substring", map[string]any{"dataset": "OUTLAYS", "account": "bureau of inv"}, "out-2025-03-justice"),
		lob("all newest posted first", nil, l1, l2),
		lob("registrant_name", map[string]any{"registrant_name": "akin gump"}, l1),
		lob("registrant_id", map[string]any{"registrant_id": "500200"}, l2),
		lob("client_name", map[string]any{"client_name": "ENERGY"}, l2),
		lob("client_id", map[string]any{"client_id": "9001"}, l1),
		lob("lobbyist_name any lobbyist", map[string]any{"lobbyist_name": "smith"}, l1),
		lob("filing_year", map[string]any{"filing_year": 2024}, l2),
		lob("filing_period", map[string]any{"filing_period": "AMENDMENT"}, l2),
		lob("issue_area element", map[string]any{"issue_area": "TAX"}, l1),
		lob("issue_area not substring", map[string]any{"issue_area": "TA"}),
		lob("issue_area any case", map[string]any{"issue_area": "tax"}, l1),
		lob("agency_acted_on whole element, case-insensitive", map[string]any{"agency_acted_on": "house of representatives"}, l2),
		lob("agency_acted_on not substring", map[string]any{"agency_acted_on": "house"}),
	}
	for _, c := range cases {
		t.Run(c.field+"/"+c.name, func(t *testing.T) {
			ec := *e
			ec.t = t
			p := ec.list(c.field, gqlIDsQuery(c.field, c.input, c.idKey), map[string]any{"in": c.in})
			got := ids(p, c.idKey)
			if c.want == nil {
				c.want = []string{}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if p.NextCursor != nil {
				t.Fatalf("single page has nextCursor %q", *p.NextCursor)
			}
		})
	}
}

func TestItemFieldsRoundTrip(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	r := e.gql(`{ bill(id: "hr2882-118") { id congress type number officialTitle introducedDate memberName memberBioguideId
		memberByCongressKey committeeNames sourceUrl lastSyncedAt } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	var b map[string]any
	if err := jsonUnmarshal(r.Data["bill"], &b); err != nil {
		t.Fatal(err)
	}
	if b["introducedDate"] != "2023-04-25" || b["memberByCongressKey"] != "C001078:118" || b["number"] != float64(2882) {
		t.Fatalf("bill = %v", b)
	}
	m := e.list("members", `{ members(input: {state: "WI"}) { items { member_id bioguide_id name state terms { congress chamber party } } nextCursor } }`, nil)
	terms := m.Items[0]["terms"].([]any)
	if len(terms) != 2 || terms[1].(map[string]any)["chamber"] != "senate" {
		t.Fatalf("terms = %v", terms)
	}
	rf := e.list("regulatoryFilings", `{ regulatoryFilings(input: {agency_id: "456"}) { items { id type agencies { agency_id name parent_agency_id } rins docket_ids publication_date filing_period } nextCursor } }`, nil)
	if ag := rf.Items[0]["agencies"].([]any); len(ag) != 2 || ag[1].(map[string]any)["parent_agency_id"] != "12" {
		t.Fatalf("agencies = %v", ag)
	}
	fb := e.list("federalBudgets", `{ federalBudgets(input: {dataset: OUTLAYS, month: "2025-03"}) { items { id amount fiscal_year_to_date_amount record_date month } nextCursor } }`, nil)
	if fb.Items[0]["amount"] != 812345678.12 || fb.Items[0]["record_date"] != "2025-03-31" {
		t.Fatalf("budget = %v", fb.Items[0])
	}
	ld := e.list("lobbyingDisclosures", `{ lobbyingDisclosures(input: {issue_area: "HCR"}) { items { id income posted_at activities { issue_area lobbyists { name is_new } agencies_acted_on } } nextCursor } }`, nil)
	acts := ld.Items[0]["activities"].([]any)
	if ld.Items[0]["posted_at"] != "2025-04-18T14:03:00Z" || len(acts) != 1 || acts[0].(map[string]any)["lobbyists"].([]any)[0].(map[string]any)["is_new"] != true {
		t.Fatalf("lobbying = %v", ld.Items[0])
	}
}

// TestCaseFoldedFiltersShareCursors: codes are folded to their stored case before the cursor binding
// (docs/design.md D32), so a cursor from chamber "Senate" continues chamber "senate".
func TestCaseFoldedFiltersShareCursors(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	first := e.list("members", gqlIDsQuery("members", "MembersInput", "member_id"),
		map[string]any{"in": map[string]any{"chamber": "Senate", "limit": 1}})
	if first.NextCursor == nil || !reflect.DeepEqual(ids(first, "member_id"), []string{"S000148"}) {
		t.Fatalf("first page %v %v", ids(first, "member_id"), first.NextCursor)
	}
	next := e.list("members", gqlIDsQuery("members", "MembersInput", "member_id"),
		map[string]any{"in": map[string]any{"chamber": "senate", "limit": 1, "cursor": *first.NextCursor}})
	if !reflect.DeepEqual(ids(next, "member_id"), []string{"B001230"}) {
		t.Fatalf("next page %v", ids(next, "member_id"))
	}
}
