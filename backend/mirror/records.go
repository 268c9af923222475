package mirror

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
)

// Family is a record family (change_events.family).
type Family string

// The five families.
const (
	Bills               Family = "bills"
	Members             Family = "members"
	RegulatoryFilings   Family = "regulatory_filings"
	FederalBudgets      Family = "federal_budgets"
	LobbyingDisclosures Family = "lobbying_disclosures"
)

// Record is a normalized record ready to be written. Its JSON encoding is the record as the API shows it.
type Record interface {
	RecordID() string
}

// Bill is a normalized bill.
type Bill struct{ records.Bill }

// RecordID implements Record.
func (b *Bill) RecordID() string { return b.ID }

// Member is a normalized member: the API's member (records.Member) with the terms as the sync stores them.
// Its Terms replaces records.Member.Terms, which stays empty here (encoding/json and field selection both take
// the shallower field), so the record's JSON keeps records.Member's field order.
type Member struct {
	records.Member
	Terms []MemberTerm `json:"terms"`
}

// MemberTerm is one Congress served in one chamber (records.MemberTerm: congress, chamber, party) with the
// state and district stored on member_terms and carried by member events, which the API's MemberTerm does not
// show.
type MemberTerm struct {
	records.MemberTerm
	State    *string `json:"state"`
	District *int    `json:"district"`
}

// RecordID implements Record.
func (m *Member) RecordID() string { return m.MemberID }

// RegulatoryFiling is a normalized Federal Register document.
type RegulatoryFiling struct{ records.RegulatoryFiling }

// RecordID implements Record.
func (f *RegulatoryFiling) RecordID() string { return f.ID }

// BudgetLine is a normalized federal budget line.
type BudgetLine struct{ records.FederalBudgetLine }

// RecordID implements Record.
func (l *BudgetLine) RecordID() string { return l.ID }

// LobbyingDisclosure is a normalized LDA filing.
type LobbyingDisclosure struct{ records.LobbyingDisclosure }

// RecordID implements Record.
func (d *LobbyingDisclosure) RecordID() string { return d.ID }

// writer knows one family's table: a family with a stage writes its changed rows through a staging table
// (stage.go), the others with one upsert statement per record.
type writer struct {
	table, idCol string
	upsert       func(b *pgx.Batch, r Record, now any) error
	stage        *stageSpec
}

func (w writer) deleteSQL() string {
	return `UPDATE ` + w.table + ` SET deleted_at = $2 WHERE ` + w.idCol + ` = $1`
}

func writerFor(f Family) (writer, error) {
	switch f {
	case Bills:
		return writer{table: "bills", idCol: "id", upsert: upsertBill}, nil
	case Members:
		return writer{table: "members", idCol: "member_id", upsert: upsertMember}, nil
	case RegulatoryFilings:
		return writer{table: "regulatory_filings", idCol: "id", upsert: upsertFiling}, nil
	case FederalBudgets:
		return writer{table: "federal_budget_lines", idCol: "id", stage: &stageSpec{table: "federal_budget_lines",
			idCol: "id", cols: budgetColumns, row: budgetRow}}, nil
	case LobbyingDisclosures:
		return writer{table: "lobbying_disclosures", idCol: "id", upsert: upsertLobbying}, nil
	}
	return writer{}, fmt.Errorf("sync: unknown family %q", f)
}

func wrongType(want string, r Record) error {
	return fmt.Errorf("sync: expected %s, got %T", want, r)
}

func upsertBill(b *pgx.Batch, r Record, now any) error {
	x, ok := r.(*Bill)
	if !ok {
		return wrongType("*Bill", r)
	}
	b.Queue(`INSERT INTO bills (id, congress, type, number, official_title, introduced_date, member_name,
		member_bioguide_id, member_by_congress_key, committee_names, source_url, last_synced_at, deleted_at)
		VALUES ($1, $2, $3, $4, $5, $6::date, $7, $8, $9, $10, $11, $12, NULL)
		ON CONFLICT (id) DO UPDATE SET congress = EXCLUDED.congress, type = EXCLUDED.type, number = EXCLUDED.number,
			official_title = EXCLUDED.official_title, introduced_date = EXCLUDED.introduced_date,
			member_name = EXCLUDED.member_name, member_bioguide_id = EXCLUDED.member_bioguide_id,
			member_by_congress_key = EXCLUDED.member_by_congress_key, committee_names = EXCLUDED.committee_names,
			source_url = EXCLUDED.source_url, last_synced_at = EXCLUDED.last_synced_at, deleted_at = NULL`,
		x.ID, x.Congress, x.Type, x.Number, x.OfficialTitle, x.IntroducedDate, x.MemberName, x.MemberBioguideID,
		x.MemberByCongressKey, x.CommitteeNames, x.SourceURL, now)
	return nil
}

func upsertMember(b *pgx.Batch, r Record, now any) error {
	x, ok := r.(*Member)
	if !ok {
		return wrongType("*Member", r)
	}
	b.Queue(`INSERT INTO members (member_id, bioguide_id, name, state, last_synced_at, deleted_at)
		VALUES ($1, $2, $3, $4, $5, NULL)
		ON CONFLICT (member_id) DO UPDATE SET bioguide_id = EXCLUDED.bioguide_id, name = EXCLUDED.name,
			state = EXCLUDED.state, last_synced_at = EXCLUDED.last_synced_at, deleted_at = NULL`,
		x.MemberID, x.BioguideID, x.Name, x.State, now)
	b.Queue(`DELETE FROM member_terms WHERE member_id = $1`, x.MemberID)
	for i, t := range x.Terms {
		// seq keeps the terms' order: a party switch within a Congress is two rows of one congress+chamber.
		b.Queue(`INSERT INTO member_terms (member_id, congress, chamber, party, state, district, seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, x.MemberID, t.Congress, t.Chamber, t.Party, t.State, t.District, i)
	}
	return nil
}

func upsertFiling(b *pgx.Batch, r Record, now any) error {
	x, ok := r.(*RegulatoryFiling)
	if !ok {
		return wrongType("*RegulatoryFiling", r)
	}
	agencies, err := json.Marshal(x.Agencies)
	if err != nil {
		return fmt.Errorf("agencies: %w", err)
	}
	ids := make([]string, 0, len(x.Agencies))
	names := make([]string, 0, len(x.Agencies))
	for _, a := range x.Agencies {
		if a.AgencyID != nil {
			ids = append(ids, *a.AgencyID)
		}
		names = append(names, a.Name)
	}
	b.Queue(`INSERT INTO regulatory_filings (id, document_number, type, subtype, title, abstract, action, agency_id,
		agency_name, agencies, agency_ids, agency_names, publication_date, filing_year, filing_period, correction_of,
		effective_on, comments_close_on, rins, docket_ids, citation, significant, html_url, pdf_url, source_url,
		last_synced_at, deleted_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::date, $14, $15, $16, $17::date, $18::date,
			$19, $20, $21, $22, $23, $24, $25, $26, NULL)
		ON CONFLICT (id) DO UPDATE SET document_number = EXCLUDED.document_number, type = EXCLUDED.type,
			subtype = EXCLUDED.subtype, title = EXCLUDED.title, abstract = EXCLUDED.abstract, action = EXCLUDED.action,
			agency_id = EXCLUDED.agency_id, agency_name = EXCLUDED.agency_name, agencies = EXCLUDED.agencies,
			agency_ids = EXCLUDED.agency_ids, agency_names = EXCLUDED.agency_names,
			publication_date = EXCLUDED.publication_date, filing_year = EXCLUDED.filing_year,
			filing_period = EXCLUDED.filing_period, correction_of = EXCLUDED.correction_of,
			effective_on = EXCLUDED.effective_on, comments_close_on = EXCLUDED.comments_close_on, rins = EXCLUDED.rins,
			docket_ids = EXCLUDED.docket_ids, citation = EXCLUDED.citation, significant = EXCLUDED.significant,
			html_url = EXCLUDED.html_url, pdf_url = EXCLUDED.pdf_url, source_url = EXCLUDED.source_url,
			last_synced_at = EXCLUDED.last_synced_at, deleted_at = NULL`,
		x.ID, x.DocumentNumber, x.Type, x.Subtype, x.Title, x.Abstract, x.Action, x.AgencyID, x.AgencyName,
		string(agencies), ids, names, x.PublicationDate, x.FilingYear, x.FilingPeriod, x.CorrectionOf, x.EffectiveOn,
		x.CommentsCloseOn, nonNil(x.Rins), nonNil(x.DocketIDs), x.Citation, x.Significant, x.HTMLURL, x.PdfURL,
		x.SourceURL, now)
	return nil
}

// budgetColumns are the written columns of federal_budget_lines (sort_month is generated).
var budgetColumns = []string{"id", "dataset", "fiscal_year", "congress", "month", "record_date", "agency_code",
	"agency_name", "bureau_code", "bureau_name", "account_code", "account_title", "subfunction_code",
	"subfunction_title", "bea_category", "on_off_budget", "amount", "fiscal_year_to_date_amount", "source_url",
	"edition", "estimate", "transition_quarter", "last_synced_at"}

func budgetRow(r Record, now time.Time) ([]any, error) {
	x, ok := r.(*BudgetLine)
	if !ok {
		return nil, wrongType("*BudgetLine", r)
	}
	var recordDate any
	if x.RecordDate != nil {
		d, err := time.Parse(time.DateOnly, *x.RecordDate)
		if err != nil {
			return nil, fmt.Errorf("record_date: %w", err)
		}
		recordDate = d
	}
	return []any{x.ID, x.Dataset, x.FiscalYear, x.Congress, x.Month, recordDate, x.AgencyCode, x.AgencyName,
		x.BureauCode, x.BureauName, x.AccountCode, x.AccountTitle, x.SubfunctionCode, x.SubfunctionTitle,
		x.BeaCategory, x.OnOffBudget, x.Amount, x.FiscalYearToDateAmount, x.SourceURL, x.Edition, x.Estimate,
		x.TransitionQuarter, now}, nil
}

func upsertLobbying(b *pgx.Batch, r Record, now any) error {
	x, ok := r.(*LobbyingDisclosure)
	if !ok {
		return wrongType("*LobbyingDisclosure", r)
	}
	acts, err := json.Marshal(x.Activities)
	if err != nil {
		return fmt.Errorf("activities: %w", err)
	}
	b.Queue(`INSERT INTO lobbying_disclosures (id, filing_type, filing_type_display, filing_year, filing_period,
		registrant_id, registrant_name, client_id, client_name, client_description, income, expenses, posted_at,
		termination_date, issue_areas, lobbyist_names, agencies_acted_on, activities, document_url, source_url,
		last_synced_at, deleted_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::timestamptz, $14::date, $15, $16, $17, $18,
			$19, $20, $21, NULL)
		ON CONFLICT (id) DO UPDATE SET filing_type = EXCLUDED.filing_type,
			filing_type_display = EXCLUDED.filing_type_display, filing_year = EXCLUDED.filing_year,
			filing_period = EXCLUDED.filing_period, registrant_id = EXCLUDED.registrant_id,
			registrant_name = EXCLUDED.registrant_name, client_id = EXCLUDED.client_id,
			client_name = EXCLUDED.client_name, client_description = EXCLUDED.client_description,
			income = EXCLUDED.income, expenses = EXCLUDED.expenses, posted_at = EXCLUDED.posted_at,
			termination_date = EXCLUDED.termination_date, issue_areas = EXCLUDED.issue_areas,
			lobbyist_names = EXCLUDED.lobbyist_names, agencies_acted_on = EXCLUDED.agencies_acted_on,
			activities = EXCLUDED.activities, document_url = EXCLUDED.document_url, source_url = EXCLUDED.source_url,
			last_synced_at = EXCLUDED.last_synced_at, deleted_at = NULL`,
		x.ID, x.FilingType, x.FilingTypeDisplay, x.FilingYear, x.FilingPeriod, x.RegistrantID, x.RegistrantName,
		x.ClientID, x.ClientName, x.ClientDescription, x.Income, x.Expenses, x.PostedAt, x.TerminationDate,
		nonNil(x.IssueAreas), nonNil(x.LobbyistNames), nonNil(x.AgenciesActedOn), string(acts), x.DocumentURL,
		x.SourceURL, now)
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Trimmed is *s without surrounding white space, or nil when s is nil or
// holds only white space: how a source's optional text field becomes a
// record's.
func Trimmed(s *string) *string {
	if s == nil {
		return nil
	}
	v := strings.TrimSpace(*s)
	if v == "" {
		return nil
	}
	return &v
}
