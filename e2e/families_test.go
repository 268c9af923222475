package e2e

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"

	graphql "github.com/hasura/go-graphql-client"
	"github.com/jackc/pgx/v5"
)

func testFamilies(t *testing.T, s *stack.Stack, key string) {
	ctx := context.Background()
	c := gql(s, key)

	t.Run("bills", func(t *testing.T) {
		var all billsQuery
		if err := c.Query(ctx, &all, map[string]any{"input": &BillsInput{"limit": 100}}); err != nil {
			t.Fatal(err)
		}
		if len(all.Bills.Items) != 100 || all.Bills.NextCursor == nil {
			t.Fatalf("first page: %d items, next %v", len(all.Bills.Items), all.Bills.NextCursor)
		}
		p := all.Bills.Items[len(all.Bills.Items)/2]
		isP := func(b bill) bool { return b.ID == p.ID }
		for name, tc := range map[string]struct {
			in   BillsInput
			want func(bill) bool
		}{
			"congress": {BillsInput{"congress": p.Congress, "limit": 100}, func(b bill) bool { return b.Congress == p.Congress }},
			"type":     {BillsInput{"type": p.Type, "congress": p.Congress, "limit": 100}, func(b bill) bool { return b.Type == p.Type }},
			"q number": {BillsInput{"q": p.Type + strconv.Itoa(p.Number)}, func(b bill) bool { return b.Number == p.Number }},
		} {
			var q billsQuery
			if err := c.Query(ctx, &q, map[string]any{"input": &tc.in}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkFilter(t, name, q.Bills.Items, tc.want, isP)
		}
		var one struct {
			Bill *bill `graphql:"bill(id: $id)"`
		}
		if err := c.Query(ctx, &one, map[string]any{"id": graphql.ID(p.ID)}); err != nil || one.Bill == nil || !reflect.DeepEqual(*one.Bill, p) {
			t.Fatalf("bill(id): %v %+v, want %+v", err, one.Bill, p)
		}
		if err := c.Query(ctx, &one, map[string]any{"id": graphql.ID("hr999999-1")}); err != nil || one.Bill != nil {
			t.Fatalf("unknown bill: %v %+v, want null and no error", err, one.Bill)
		}
	})

	t.Run("members", func(t *testing.T) {
		var all membersQuery
		if err := c.Query(ctx, &all, map[string]any{"input": &MembersInput{"limit": 100}}); err != nil {
			t.Fatal(err)
		}
		var p member
		for _, m := range all.Members.Items {
			if m.State != nil && len(m.Terms) > 0 {
				p = m
				break
			}
		}
		if p.MemberID == "" {
			t.Fatal("no member with a state and terms on the first page")
		}
		term := p.Terms[0]
		isP := func(m member) bool { return m.MemberID == p.MemberID }
		hasTerm := func(m member, congress int, chamber string) bool {
			for _, tm := range m.Terms {
				if (congress == 0 || tm.Congress == congress) && (chamber == "" || tm.Chamber == chamber) {
					return true
				}
			}
			return false
		}
		for name, tc := range map[string]struct {
			in   MembersInput
			want func(member) bool
		}{
			"state":    {MembersInput{"state": *p.State, "limit": 100}, func(m member) bool { return m.State != nil && *m.State == *p.State }},
			"chamber":  {MembersInput{"chamber": term.Chamber, "state": *p.State, "limit": 100}, func(m member) bool { return hasTerm(m, 0, term.Chamber) }},
			"congress": {MembersInput{"congress": term.Congress, "state": *p.State, "limit": 100}, func(m member) bool { return hasTerm(m, term.Congress, "") }},
			"both":     {MembersInput{"congress": term.Congress, "chamber": term.Chamber, "state": *p.State}, func(m member) bool { return hasTerm(m, term.Congress, term.Chamber) }},
		} {
			var q membersQuery
			if err := c.Query(ctx, &q, map[string]any{"input": &tc.in}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkFilter(t, name, q.Members.Items, tc.want, isP)
		}
	})

	t.Run("regulatoryFilings", func(t *testing.T) {
		var all filingsQuery
		if err := c.Query(ctx, &all, map[string]any{"input": &RegulatoryFilingsInput{"limit": 100}}); err != nil {
			t.Fatal(err)
		}
		var p filing
		for _, f := range all.RegulatoryFilings.Items {
			if len(f.Rins) > 0 && len(f.DocketIDs) > 0 {
				p = f
				break
			}
		}
		if p.ID == "" {
			t.Fatal("no filing with a RIN and a docket on the first page")
		}
		isP := func(f filing) bool { return f.ID == p.ID }
		anyAgency := func(f filing, pred func(id, name string) bool) bool {
			for _, a := range f.Agencies {
				if pred(a.AgencyID, a.Name) {
					return true
				}
			}
			return false
		}
		sub := strings.ToUpper(p.AgencyName[:len(p.AgencyName)/2])
		for name, tc := range map[string]struct {
			in   RegulatoryFilingsInput
			want func(filing) bool
		}{
			"agency_id": {RegulatoryFilingsInput{"agency_id": p.AgencyID, "limit": 100}, func(f filing) bool { return anyAgency(f, func(id, _ string) bool { return id == p.AgencyID }) }},
			"agency_name": {RegulatoryFilingsInput{"agency_name": sub, "limit": 100}, func(f filing) bool {
				return anyAgency(f, func(_, n string) bool { return strings.Contains(strings.ToUpper(n), sub) })
			}},
			"type":          {RegulatoryFilingsInput{"type": p.Type, "agency_id": p.AgencyID, "limit": 100}, func(f filing) bool { return f.Type == p.Type }},
			"filing_year":   {RegulatoryFilingsInput{"filing_year": p.FilingYear, "agency_id": p.AgencyID, "limit": 100}, func(f filing) bool { return f.FilingYear == p.FilingYear }},
			"filing_period": {RegulatoryFilingsInput{"filing_period": p.FilingPeriod, "filing_year": p.FilingYear, "agency_id": p.AgencyID, "limit": 100}, func(f filing) bool { return f.FilingPeriod == p.FilingPeriod }},
			"rIN":           {RegulatoryFilingsInput{"rIN": p.Rins[0]}, func(f filing) bool { return contains(f.Rins, p.Rins[0]) }},
			"docket_id":     {RegulatoryFilingsInput{"docket_id": p.DocketIDs[0]}, func(f filing) bool { return contains(f.DocketIDs, p.DocketIDs[0]) }},
		} {
			var q filingsQuery
			if err := c.Query(ctx, &q, map[string]any{"input": &tc.in}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkFilter(t, name, q.RegulatoryFilings.Items, tc.want, isP)
		}
	})

	t.Run("federalBudgets", func(t *testing.T) {
		for _, dataset := range []string{"APPROPRIATIONS", "OUTLAYS"} {
			var all budgetsQuery
			if err := c.Query(ctx, &all, map[string]any{"input": FederalBudgetsInput{"dataset": dataset, "limit": 100}}); err != nil {
				t.Fatal(err)
			}
			if len(all.FederalBudgets.Items) == 0 {
				t.Fatalf("%s: no lines", dataset)
			}
			p := all.FederalBudgets.Items[len(all.FederalBudgets.Items)/2]
			isP := func(b budgetLine) bool { return b.ID == p.ID }
			agencySub := strings.ToLower(p.AgencyName[:len(p.AgencyName)/2])
			accountSub := strings.ToUpper(p.AccountTitle[:len(p.AccountTitle)/2])
			cases := map[string]struct {
				in   FederalBudgetsInput
				want func(budgetLine) bool
			}{
				"dataset":     {FederalBudgetsInput{"dataset": dataset, "fiscal_year": p.FiscalYear, "limit": 100}, func(b budgetLine) bool { return b.Dataset == dataset }},
				"congress":    {FederalBudgetsInput{"dataset": dataset, "congress": p.Congress, "agency": agencySub, "limit": 100}, func(b budgetLine) bool { return b.Congress == p.Congress }},
				"fiscal_year": {FederalBudgetsInput{"dataset": dataset, "fiscal_year": p.FiscalYear, "agency": agencySub, "limit": 100}, func(b budgetLine) bool { return b.FiscalYear == p.FiscalYear }},
				"agency":      {FederalBudgetsInput{"dataset": dataset, "agency": agencySub, "fiscal_year": p.FiscalYear, "limit": 100}, func(b budgetLine) bool { return strings.Contains(strings.ToLower(b.AgencyName), agencySub) }},
				"account":     {FederalBudgetsInput{"dataset": dataset, "account": accountSub, "limit": 100}, func(b budgetLine) bool { return strings.Contains(strings.ToUpper(b.AccountTitle), accountSub) }},
			}
			if dataset == "OUTLAYS" {
				cases["month"] = struct {
					in   FederalBudgetsInput
					want func(budgetLine) bool
				}{FederalBudgetsInput{"dataset": dataset, "month": *p.Month, "agency": agencySub}, func(b budgetLine) bool { return b.Month != nil && *b.Month == *p.Month }}
			} else {
				cases["bureau_code"] = struct {
					in   FederalBudgetsInput
					want func(budgetLine) bool
				}{FederalBudgetsInput{"dataset": dataset, "bureau_code": *p.BureauCode, "agency": agencySub, "fiscal_year": p.FiscalYear}, func(b budgetLine) bool { return b.BureauCode != nil && *b.BureauCode == *p.BureauCode }}
			}
			for name, tc := range cases {
				var q budgetsQuery
				if err := c.Query(ctx, &q, map[string]any{"input": tc.in}); err != nil {
					t.Fatalf("%s %s: %v", dataset, name, err)
				}
				checkFilter(t, dataset+" "+name, q.FederalBudgets.Items, tc.want, isP)
			}
		}
	})

	t.Run("lobbyingDisclosures", func(t *testing.T) {
		var all lobbyingQuery
		if err := c.Query(ctx, &all, map[string]any{"input": &LobbyingDisclosuresInput{"limit": 100}}); err != nil {
			t.Fatal(err)
		}
		var p disclosure
		for _, d := range all.LobbyingDisclosures.Items {
			if len(d.IssueAreas) > 0 && len(d.LobbyistNames) > 0 && len(d.AgenciesActedOn) > 0 {
				p = d
				break
			}
		}
		if p.ID == "" {
			t.Fatal("no disclosure with issues, lobbyists and agencies on the first page")
		}
		isP := func(d disclosure) bool { return d.ID == p.ID }
		reg := strings.ToUpper(p.RegistrantName[:len(p.RegistrantName)/2])
		cli := strings.ToLower(p.ClientName[:len(p.ClientName)/2])
		lob := strings.ToUpper(p.LobbyistNames[0])
		agency := strings.ToLower(p.AgenciesActedOn[0])
		for name, tc := range map[string]struct {
			in   LobbyingDisclosuresInput
			want func(disclosure) bool
		}{
			"registrant_name": {LobbyingDisclosuresInput{"registrant_name": reg, "limit": 100}, func(d disclosure) bool { return strings.Contains(strings.ToUpper(d.RegistrantName), reg) }},
			"registrant_id":   {LobbyingDisclosuresInput{"registrant_id": p.RegistrantID, "limit": 100}, func(d disclosure) bool { return d.RegistrantID == p.RegistrantID }},
			"client_name":     {LobbyingDisclosuresInput{"client_name": cli, "limit": 100}, func(d disclosure) bool { return strings.Contains(strings.ToLower(d.ClientName), cli) }},
			"client_id":       {LobbyingDisclosuresInput{"client_id": p.ClientID, "limit": 100}, func(d disclosure) bool { return d.ClientID == p.ClientID }},
			"lobbyist_name":   {LobbyingDisclosuresInput{"lobbyist_name": lob, "limit": 100}, func(d disclosure) bool { return containsFold(d.LobbyistNames, lob) }},
			"filing_year":     {LobbyingDisclosuresInput{"filing_year": p.FilingYear, "registrant_id": p.RegistrantID, "limit": 100}, func(d disclosure) bool { return d.FilingYear == p.FilingYear }},
			"filing_period":   {LobbyingDisclosuresInput{"filing_period": p.FilingPeriod, "registrant_id": p.RegistrantID, "limit": 100}, func(d disclosure) bool { return d.FilingPeriod == p.FilingPeriod }},
			"issue_area":      {LobbyingDisclosuresInput{"issue_area": p.IssueAreas[0], "registrant_id": p.RegistrantID, "limit": 100}, func(d disclosure) bool { return contains(d.IssueAreas, p.IssueAreas[0]) }},
			"agency_acted_on": {LobbyingDisclosuresInput{"agency_acted_on": agency, "registrant_id": p.RegistrantID, "limit": 100}, func(d disclosure) bool { return containsFold(d.AgenciesActedOn, agency) }},
		} {
			var q lobbyingQuery
			if err := c.Query(ctx, &q, map[string]any{"input": &tc.in}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkFilter(t, name, q.LobbyingDisclosures.Items, tc.want, isP)
		}
	})
}

// testWalk pages through every bill through the gateway and compares with the
// database: each bill exactly once, last page has nextCursor null.
func testWalk(t *testing.T, s *stack.Stack, key string) {
	ctx := context.Background()
	c := gql(s, key)
	seen := map[string]bool{}
	var cursor *string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("walk did not end")
		}
		in := BillsInput{"limit": 100}
		if cursor != nil {
			in["cursor"] = *cursor
		}
		var q billsQuery
		if err := c.Query(ctx, &q, map[string]any{"input": &in}); err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, b := range q.Bills.Items {
			if seen[b.ID] {
				t.Fatalf("bill %s seen twice", b.ID)
			}
			seen[b.ID] = true
		}
		if q.Bills.NextCursor == nil {
			break
		}
		cursor = q.Bills.NextCursor
	}
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM bills WHERE deleted_at IS NULL").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 || len(seen) != n {
		t.Fatalf("walked %d bills, database has %d", len(seen), n)
	}
}
