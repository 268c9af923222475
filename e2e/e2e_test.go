package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/stack"

	graphql "github.com/hasura/go-graphql-client"
	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testenv"
)

// keys is the set of credentials the suite issues.
type keys struct {
	enterprise, free, paidBeta, suspended, revoked, testEnv string
}

// TestGateway brings up the whole service from the shipped Caddyfile.local and
// checks it from the outside: typed queries of all five families with every
// filter, a full page walk, GET /bills, TLS and every error row of DESIGN §3.6.
func TestGateway(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	var k keys
	k.enterprise, _ = s.IssueKey("acme", "enterprise", "live")
	k.free, _ = s.IssueKey("smallco", "free", "live")
	k.paidBeta, _ = s.IssueKey("betaco", "paid_beta", "live")
	k.suspended, _ = s.IssueKey("shadyco", "enterprise", "live")
	s.Run(bins.Civicgate, "keys", "suspend", "--org", "shadyco")
	var revokedID string
	k.revoked, revokedID = s.IssueKey("oldco", "enterprise", "live")
	s.Run(bins.Civicgate, "keys", "revoke", revokedID)
	k.testEnv, _ = s.IssueKey("acme", "enterprise", "test")
	s.StartRecordsd()
	gw := s.StartGateway("caddyfile/Caddyfile.local")

	t.Run("LoopbackOnly", func(t *testing.T) { testLoopbackOnly(t, gw.Pid()) })
	t.Run("TLS", func(t *testing.T) { testTLS(t, s) })
	t.Run("Families", func(t *testing.T) { testFamilies(t, s, k.enterprise) })
	t.Run("WalkAllBills", func(t *testing.T) { testWalk(t, s, k.enterprise) })
	t.Run("GetBills", func(t *testing.T) { testGetBills(t, s, k) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, s, k) })
	t.Run("RateLimit", func(t *testing.T) { testRateLimit(t, s, k.free) })
	t.Run("NoSecretsInLogs", func(t *testing.T) {
		s.CheckLogs(t, k.enterprise, k.free, k.paidBeta, k.suspended, k.revoked, k.testEnv)
	})
}

func testTLS(t *testing.T, s *stack.Stack) {
	// Plain HTTP is redirected to HTTPS, never served.
	resp, err := s.Client.Get(s.HTTPURL + "/v1/graphql")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPermanentRedirect || !strings.HasPrefix(resp.Header.Get("Location"), "https://") {
		t.Fatalf("http:// answered %d Location %q, want a 308 to https", resp.StatusCode, resp.Header.Get("Location"))
	}
	// TLS 1.1 and older are refused; 1.2 works.
	tr := s.Client.Transport.(*http.Transport)
	old := tr.TLSClientConfig.Clone()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.HTTPSURL, "https://"), old)
	if err == nil {
		conn.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
	v12 := tr.TLSClientConfig.Clone()
	v12.MaxVersion = tls.VersionTLS12
	conn, err = tls.Dial("tcp", strings.TrimPrefix(s.HTTPSURL, "https://"), v12)
	if err != nil {
		t.Fatalf("TLS 1.2 handshake: %v", err)
	}
	conn.Close()
}

// gql is a typed client for the gateway with a key.
func gql(s *stack.Stack, key string) *graphql.Client {
	return graphql.NewClient(s.HTTPSURL+"/v1/graphql", s.Client).WithRequestModifier(func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+key)
	})
}

// Input types named as the schema names them.
type (
	BillsInput               map[string]any
	MembersInput             map[string]any
	RegulatoryFilingsInput   map[string]any
	FederalBudgetsInput      map[string]any
	LobbyingDisclosuresInput map[string]any
)

func (BillsInput) GetGraphQLType() string               { return "BillsInput" }
func (MembersInput) GetGraphQLType() string             { return "MembersInput" }
func (RegulatoryFilingsInput) GetGraphQLType() string   { return "RegulatoryFilingsInput" }
func (FederalBudgetsInput) GetGraphQLType() string      { return "FederalBudgetsInput" }
func (LobbyingDisclosuresInput) GetGraphQLType() string { return "LobbyingDisclosuresInput" }

type bill struct {
	ID                  string  `graphql:"id"`
	Congress            int     `graphql:"congress"`
	Type                string  `graphql:"type"`
	Number              int     `graphql:"number"`
	OfficialTitle       string  `graphql:"officialTitle"`
	IntroducedDate      *string `graphql:"introducedDate"`
	MemberName          *string `graphql:"memberName"`
	MemberBioguideID    *string `graphql:"memberBioguideId"`
	MemberByCongressKey *string `graphql:"memberByCongressKey"`
	CommitteeNames      string  `graphql:"committeeNames"`
	SourceURL           *string `graphql:"sourceUrl"`
	LastSyncedAt        string  `graphql:"lastSyncedAt"`
}

type billsQuery struct {
	Bills struct {
		Items      []bill
		NextCursor *string
	} `graphql:"bills(input: $input)"`
}

type member struct {
	MemberID   string  `graphql:"member_id"`
	BioguideID string  `graphql:"bioguide_id"`
	Name       string  `graphql:"name"`
	State      *string `graphql:"state"`
	Terms      []struct {
		Congress int     `graphql:"congress"`
		Chamber  string  `graphql:"chamber"`
		Party    *string `graphql:"party"`
	} `graphql:"terms"`
}

type membersQuery struct {
	Members struct {
		Items      []member
		NextCursor *string
	} `graphql:"members(input: $input)"`
}

type filing struct {
	ID         string `graphql:"id"`
	Type       string `graphql:"type"`
	AgencyID   string `graphql:"agency_id"`
	AgencyName string `graphql:"agency_name"`
	Agencies   []struct {
		AgencyID string `graphql:"agency_id"`
		Name     string `graphql:"name"`
	} `graphql:"agencies"`
	FilingYear   int      `graphql:"filing_year"`
	FilingPeriod string   `graphql:"filing_period"`
	Rins         []string `graphql:"rins"`
	DocketIDs    []string `graphql:"docket_ids"`
}

type filingsQuery struct {
	RegulatoryFilings struct {
		Items      []filing
		NextCursor *string
	} `graphql:"regulatoryFilings(input: $input)"`
}

type budgetLine struct {
	ID           string  `graphql:"id"`
	Dataset      string  `graphql:"dataset"`
	FiscalYear   int     `graphql:"fiscal_year"`
	Congress     int     `graphql:"congress"`
	Month        *string `graphql:"month"`
	AgencyName   string  `graphql:"agency_name"`
	BureauCode   *string `graphql:"bureau_code"`
	AccountTitle string  `graphql:"account_title"`
	Amount       float64 `graphql:"amount"`
}

type budgetsQuery struct {
	FederalBudgets struct {
		Items      []budgetLine
		NextCursor *string
	} `graphql:"federalBudgets(input: $input)"`
}

type disclosure struct {
	ID              string   `graphql:"id"`
	FilingYear      int      `graphql:"filing_year"`
	FilingPeriod    string   `graphql:"filing_period"`
	RegistrantID    string   `graphql:"registrant_id"`
	RegistrantName  string   `graphql:"registrant_name"`
	ClientID        string   `graphql:"client_id"`
	ClientName      string   `graphql:"client_name"`
	IssueAreas      []string `graphql:"issue_areas"`
	LobbyistNames   []string `graphql:"lobbyist_names"`
	AgenciesActedOn []string `graphql:"agencies_acted_on"`
}

type lobbyingQuery struct {
	LobbyingDisclosures struct {
		Items      []disclosure
		NextCursor *string
	} `graphql:"lobbyingDisclosures(input: $input)"`
}

// filterCase runs a filtered query and checks that the record it was built
// from is among the results and that every result satisfies the filter.
func checkFilter[T any](t *testing.T, name string, items []T, want func(T) bool, isProbe func(T) bool) {
	t.Helper()
	if len(items) == 0 {
		t.Fatalf("%s: no results", name)
	}
	found := false
	for _, it := range items {
		if !want(it) {
			t.Fatalf("%s: result does not satisfy the filter: %+v", name, it)
		}
		if isProbe(it) {
			found = true
		}
	}
	if !found {
		t.Fatalf("%s: the record the filter was built from is missing", name)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func containsFold(list []string, sub string) bool {
	for _, x := range list {
		if strings.Contains(strings.ToLower(x), strings.ToLower(sub)) {
			return true
		}
	}
	return false
}

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

// do sends a raw request to the gateway.
func do(t *testing.T, s *stack.Stack, method, path, key, contentType string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.HTTPSURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func testGetBills(t *testing.T, s *stack.Stack, k keys) {
	resp, body := do(t, s, "GET", "/bills?limit=5", k.free, "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /bills: %d %s", resp.StatusCode, body)
	}
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor *string          `json:"nextCursor"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 5 || page.NextCursor == nil || page.Items[0]["officialTitle"] == nil {
		t.Fatalf("GET /bills page: %d items, next %v, first %v", len(page.Items), page.NextCursor, page.Items[0])
	}
	if resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("RateLimit-Policy") == "" {
		t.Fatalf("missing X-Request-Id or RateLimit-Policy: %v", resp.Header)
	}
}

const billsDoc = `{"query":"{ bills(input:{limit:1}) { items { id } nextCursor } }"}`

func testErrors(t *testing.T, s *stack.Stack, k keys) {
	type row struct {
		name, method, path, key, ctype, body string
		status                               int
		want                                 string
		header, value                        string
	}
	big := `{"query":"{ bills { nextCursor } }","variables":{"pad":"` + strings.Repeat("x", 200<<10) + `"}}`
	rows := []row{
		{"missing token", "POST", "/v1/graphql", "", "application/json", billsDoc, 401, `{"error":"Missing bearer token"}`, "WWW-Authenticate", `Bearer realm="civicgate"`},
		{"unknown key", "POST", "/v1/graphql", "cg_live_0000000000000000000000000000000000000000000", "application/json", billsDoc, 401, `{"error":"Invalid API key"}`, "WWW-Authenticate", `Bearer realm="civicgate"`},
		{"revoked key", "POST", "/v1/graphql", k.revoked, "application/json", billsDoc, 401, `{"error":"API key revoked"}`, "WWW-Authenticate", `Bearer realm="civicgate"`},
		{"other environment", "POST", "/v1/graphql", k.testEnv, "application/json", billsDoc, 401, `{"error":"API key not valid in this environment"}`, "", ""},
		{"suspended", "POST", "/v1/graphql", k.suspended, "application/json", billsDoc, 403, `{"error":"Organization suspended"}`, "", ""},
		{"tier not entitled", "POST", "/v1/graphql", k.free, "application/json", `{"query":"{ regulatoryFilings { nextCursor } }"}`, 403, `{"error":"Tier not entitled to this endpoint family"}`, "", ""},
		{"GET graphql", "GET", "/v1/graphql", k.enterprise, "", "", 405, "", "Allow", "POST"},
		{"not JSON", "POST", "/v1/graphql", k.enterprise, "text/plain", billsDoc, 415, "", "", ""},
		{"too large", "POST", "/v1/graphql", k.enterprise, "application/json", big, 413, `{"errors":[{"message":"Request body too large"}]}`, "", ""},
		{"bad JSON", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":`, 400, "", "", ""},
		{"query missing", "POST", "/v1/graphql", k.enterprise, "application/json", `{}`, 400, "", "", ""},
		{"token in document", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":"{ bills(input:{q:\"` + k.enterprise + `\"}) { nextCursor } }"}`, 400, "", "", ""},
		{"validation error", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":"{ bills { nope } }"}`, 200, "", "", ""},
		{"limit out of range", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":"{ bills(input:{limit:101}) { nextCursor } }"}`, 200, "", "", ""},
		{"unknown path", "GET", "/nope", k.enterprise, "", "", 404, `{"error":"Not Found"}`, "", ""},
		{"bills bad limit", "GET", "/bills?limit=0", k.enterprise, "", "", 400, "", "", ""},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var body io.Reader
			if r.body != "" {
				body = strings.NewReader(r.body)
			}
			resp, got := do(t, s, r.method, r.path, r.key, r.ctype, body)
			if resp.StatusCode != r.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, r.status, got)
			}
			if r.want != "" && got != r.want {
				t.Fatalf("body %s, want %s", got, r.want)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q", ct)
			}
			if r.header != "" && resp.Header.Get(r.header) != r.value {
				t.Fatalf("%s: %q, want %q", r.header, resp.Header.Get(r.header), r.value)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Fatal("no X-Request-Id")
			}
			checkShape(t, r.status, got)
		})
	}
}

// checkShape checks the body shape rules of spec §7 / DESIGN §3.6 for every status.
func checkShape(t *testing.T, status int, body string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("body is not a JSON object: %s", body)
	}
	switch {
	case status == 200:
		if string(m["data"]) != "null" || len(m["errors"]) < 3 || len(m) != 2 {
			t.Fatalf("200 body not {data:null, errors:[…]}: %s", body)
		}
	case status == 400 || status == 405 || status == 413 || status == 415:
		var errs struct {
			Errors []struct {
				Message string `json:"message"`
			} `json:"errors"`
		}
		if err := json.Unmarshal([]byte(body), &errs); err != nil || len(m) != 1 || len(errs.Errors) == 0 || errs.Errors[0].Message == "" {
			t.Fatalf("%d body not {errors:[{message}]}: %s", status, body)
		}
	default:
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || len(m) != 1 || e.Error == "" {
			t.Fatalf("%d body not {error:string}: %s", status, body)
		}
	}
}

// testRateLimit spends the free tier's 30/min quota and checks the 429.
func testRateLimit(t *testing.T, s *stack.Stack, key string) {
	// GetBills spent one request of this key already; spend the rest.
	var last *http.Response
	var body string
	for i := 0; i < 40; i++ {
		last, body = do(t, s, "GET", "/bills?limit=1", key, "", nil)
		if last.StatusCode == http.StatusTooManyRequests {
			break
		}
		if last.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, last.StatusCode, body)
		}
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatal("30/min free tier never refused 40 requests")
	}
	if body != `{"error":"Rate limit exceeded"}` {
		t.Fatalf("429 body %s", body)
	}
	ra, err := strconv.Atoi(last.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", last.Header.Get("Retry-After"))
	}
	if !strings.Contains(last.Header.Get("RateLimit-Policy"), `"free";q=30;w=60`) {
		t.Fatalf("RateLimit-Policy %q", last.Header.Get("RateLimit-Policy"))
	}
}

// TestUpstreamFaults: the gateway answers 502 and 504 as JSON when recordsd
// refuses connections or hangs (DESIGN §3.6).
func TestUpstreamFaults(t *testing.T) {
	s := stack.New(t, &bins)
	s.Run(bins.Civicgate, "keys", "migrate")
	key, _ := s.IssueKey("acme", "enterprise", "live")

	// A listener that accepts connections and never answers.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	s.Setenv("CIVICGATE_UPSTREAM", hung.Addr().String())
	s.Setenv("CIVICGATE_UPSTREAM_TIMEOUT", "1s")
	s.StartGateway("caddyfile/Caddyfile.local")
	resp, body := do(t, s, "GET", "/bills", key, "", nil)
	if resp.StatusCode != 504 || body != `{"error":"Gateway Timeout"}` {
		t.Fatalf("hung upstream: %d %s", resp.StatusCode, body)
	}

	// Point the running gateway at a closed port through a reload.
	closed := testenv.FreePort(t)
	s.Setenv("CIVICGATE_UPSTREAM", "127.0.0.1:"+strconv.Itoa(closed))
	s.Run(bins.Civicgate, "reload", "--config", "caddyfile/Caddyfile.local", "--adapter", "caddyfile", "--address", s.Getenv("CIVICGATE_ADMIN"))
	resp, body = do(t, s, "POST", "/v1/graphql", key, "application/json", strings.NewReader(billsDoc))
	if resp.StatusCode != 502 || body != `{"error":"Bad Gateway"}` {
		t.Fatalf("refusing upstream: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}
