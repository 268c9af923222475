package e2e

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
