// Package records defines recordsd's domain types (bound directly by gqlgen and serialised by GET /bills)
// and the validation of their filter inputs (docs/design.md D3, D4).
package records

// Bill is a bill or resolution. JSON names equal the GraphQL field names.
type Bill struct {
	ID                  string  `json:"id"`
	Congress            int     `json:"congress"`
	Type                string  `json:"type"`
	Number              int     `json:"number"`
	OfficialTitle       string  `json:"officialTitle"`
	IntroducedDate      *string `json:"introducedDate"`
	MemberName          *string `json:"memberName"`
	MemberBioguideID    *string `json:"memberBioguideId"`
	MemberByCongressKey *string `json:"memberByCongressKey"`
	CommitteeNames      string  `json:"committeeNames"`
	SourceURL           *string `json:"sourceUrl"`
	LastSyncedAt        string  `json:"lastSyncedAt"`
}

// Member is a member of Congress.
type Member struct {
	MemberID   string       `json:"member_id"`
	BioguideID string       `json:"bioguide_id"`
	Name       string       `json:"name"`
	State      *string      `json:"state"`
	Terms      []MemberTerm `json:"terms"`
}

// MemberTerm is one Congress served in one chamber.
type MemberTerm struct {
	Congress int     `json:"congress"`
	Chamber  string  `json:"chamber"`
	Party    *string `json:"party"`
}

// RegulatoryAgency is an agency listed on a Federal Register document.
type RegulatoryAgency struct {
	AgencyID       *string `json:"agency_id"`
	Name           string  `json:"name"`
	Slug           *string `json:"slug"`
	ParentAgencyID *string `json:"parent_agency_id"`
}

// RegulatoryFiling is a Federal Register document.
type RegulatoryFiling struct {
	ID              string             `json:"id"`
	DocumentNumber  string             `json:"document_number"`
	Type            string             `json:"type"`
	Subtype         *string            `json:"subtype"`
	Title           string             `json:"title"`
	Abstract        *string            `json:"abstract"`
	Action          *string            `json:"action"`
	AgencyID        *string            `json:"agency_id"`
	AgencyName      *string            `json:"agency_name"`
	Agencies        []RegulatoryAgency `json:"agencies"`
	PublicationDate string             `json:"publication_date"`
	FilingYear      int                `json:"filing_year"`
	FilingPeriod    string             `json:"filing_period"`
	CorrectionOf    *string            `json:"correction_of"`
	EffectiveOn     *string            `json:"effective_on"`
	CommentsCloseOn *string            `json:"comments_close_on"`
	Rins            []string           `json:"rins"`
	DocketIDs       []string           `json:"docket_ids"`
	Citation        *string            `json:"citation"`
	Significant     *bool              `json:"significant"`
	HTMLURL         *string            `json:"html_url"`
	PdfURL          *string            `json:"pdf_url"`
	SourceURL       *string            `json:"source_url"`
	LastSyncedAt    string             `json:"last_synced_at"`
}

// FederalBudgetLine is one line of the APPROPRIATIONS or OUTLAYS dataset.
type FederalBudgetLine struct {
	ID                     string   `json:"id"`
	Dataset                string   `json:"dataset"`
	FiscalYear             int      `json:"fiscal_year"`
	Congress               int      `json:"congress"`
	Month                  *string  `json:"month"`
	RecordDate             *string  `json:"record_date"`
	AgencyCode             *string  `json:"agency_code"`
	AgencyName             string   `json:"agency_name"`
	BureauCode             *string  `json:"bureau_code"`
	BureauName             *string  `json:"bureau_name"`
	AccountCode            *string  `json:"account_code"`
	AccountTitle           string   `json:"account_title"`
	SubfunctionCode        *string  `json:"subfunction_code"`
	SubfunctionTitle       *string  `json:"subfunction_title"`
	BeaCategory            *string  `json:"bea_category"`
	OnOffBudget            *string  `json:"on_off_budget"`
	Amount                 *float64 `json:"amount"`
	FiscalYearToDateAmount *float64 `json:"fiscal_year_to_date_amount"`
	SourceURL              *string  `json:"source_url"`
	// Edition is the budget year of the OMB release a line comes from (APPROPRIATIONS; docs/design.md D29).
	Edition *int `json:"edition"`
	// Estimate says the amount is an estimate in that edition, not an actual (APPROPRIATIONS).
	Estimate *bool `json:"estimate"`
	// TransitionQuarter marks OMB's TQ column: July–September 1976, served with fiscal_year 1976.
	TransitionQuarter bool   `json:"transition_quarter"`
	LastSyncedAt      string `json:"last_synced_at"`
}

// Lobbyist is a lobbyist named on an activity.
type Lobbyist struct {
	LobbyistID      *string `json:"lobbyist_id"`
	Name            string  `json:"name"`
	CoveredPosition *string `json:"covered_position"`
	IsNew           bool    `json:"is_new"`
}

// LobbyingActivity is one general issue area of a filing.
type LobbyingActivity struct {
	IssueArea       string     `json:"issue_area"`
	IssueAreaName   *string    `json:"issue_area_name"`
	Description     *string    `json:"description"`
	AgenciesActedOn []string   `json:"agencies_acted_on"`
	Lobbyists       []Lobbyist `json:"lobbyists"`
}

// LobbyingDisclosure is an LD-1/LD-2 filing.
type LobbyingDisclosure struct {
	ID                string             `json:"id"`
	FilingType        string             `json:"filing_type"`
	FilingTypeDisplay *string            `json:"filing_type_display"`
	FilingYear        int                `json:"filing_year"`
	FilingPeriod      string             `json:"filing_period"`
	RegistrantID      string             `json:"registrant_id"`
	RegistrantName    string             `json:"registrant_name"`
	ClientID          string             `json:"client_id"`
	ClientName        string             `json:"client_name"`
	ClientDescription *string            `json:"client_description"`
	Income            *float64           `json:"income"`
	Expenses          *float64           `json:"expenses"`
	PostedAt          *string            `json:"posted_at"`
	TerminationDate   *string            `json:"termination_date"`
	IssueAreas        []string           `json:"issue_areas"`
	LobbyistNames     []string           `json:"lobbyist_names"`
	AgenciesActedOn   []string           `json:"agencies_acted_on"`
	Activities        []LobbyingActivity `json:"activities"`
	DocumentURL       *string            `json:"document_url"`
	SourceURL         *string            `json:"source_url"`
	LastSyncedAt      string             `json:"last_synced_at"`
}

// Page is one keyset page of T.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

// Page types bound by gqlgen.
type (
	BillsPage               = Page[Bill]
	MembersPage             = Page[Member]
	RegulatoryFilingsPage   = Page[RegulatoryFiling]
	FederalBudgetsPage      = Page[FederalBudgetLine]
	LobbyingDisclosuresPage = Page[LobbyingDisclosure]
)
