package store

import (
	"context"
	"fmt"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
)

var lobbyingKeyset = keyset{family: "lobbying_disclosures", cols: "(sort_posted_at, id)", casts: []string{"timestamptz", "text"}, op: "<"}

// lobbyingAgencyKeyset is the same order (and cursor) on lobbying_agency_rows s, whose keys triggers keep equal
// to the disclosure's (migration 0105).
var lobbyingAgencyKeyset = keyset{family: "lobbying_disclosures", cols: "(s.posted, s.disclosure_id)", casts: []string{"timestamptz", "text"}, op: "<"}

type lobbyingFilter struct {
	RegistrantName *string `json:"rn,omitempty"`
	RegistrantID   *string `json:"ri,omitempty"`
	ClientName     *string `json:"cn,omitempty"`
	ClientID       *string `json:"ci,omitempty"`
	LobbyistName   *string `json:"ln,omitempty"`
	FilingYear     *int    `json:"y,omitempty"`
	FilingPeriod   *string `json:"p,omitempty"`
	IssueArea      *string `json:"ia,omitempty"`
	AgencyActedOn  *string `json:"ag,omitempty"`
}

var lobbyingColumns = `id, filing_type, filing_type_display, filing_year, filing_period, registrant_id, registrant_name,
	client_id, client_name, client_description, income, expenses, ` + ts("posted_at") + `, ` + date("termination_date") + `,
	issue_areas, lobbyist_names, agencies_acted_on, activities, document_url, source_url, ` + ts("last_synced_at") + `,
	` + lobbyingSortKeySQL

// lobbyingSortKeySQL is the cursor's first key: the posting time as the keyset compares it.
const lobbyingSortKeySQL = `CASE WHEN posted_at IS NULL THEN '-infinity' ELSE to_char(sort_posted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END`

// LobbyingDisclosures returns one page of lobbying filings, newest posted first (unposted last).
func (s *Store) LobbyingDisclosures(ctx context.Context, in records.LobbyingDisclosuresInput) (records.LobbyingDisclosuresPage, error) {
	p, limit, binding, err := s.lobbyingConditions(in)
	if err != nil {
		return records.LobbyingDisclosuresPage{}, err
	}
	sql := p.pageSQL(lobbyingColumns, limit) // before reading args: it adds arguments
	return queryPage(ctx, s, "lobbying", sql, p.q.params(), limit, binding, func(r pgx.Rows) (records.LobbyingDisclosure, []string, error) {
		var d records.LobbyingDisclosure
		var sortKey string
		err := r.Scan(&d.ID, &d.FilingType, &d.FilingTypeDisplay, &d.FilingYear, &d.FilingPeriod, &d.RegistrantID,
			&d.RegistrantName, &d.ClientID, &d.ClientName, &d.ClientDescription, &d.Income, &d.Expenses, &d.PostedAt,
			&d.TerminationDate, &d.IssueAreas, &d.LobbyistNames, &d.AgenciesActedOn, &d.Activities, &d.DocumentURL,
			&d.SourceURL, &d.LastSyncedAt, &sortKey)
		if err != nil {
			return d, nil, fmt.Errorf("store: scan lobbying disclosure: %w", err)
		}
		if d.Activities == nil {
			d.Activities = []records.LobbyingActivity{}
		}
		for i := range d.Activities {
			if d.Activities[i].AgenciesActedOn == nil {
				d.Activities[i].AgenciesActedOn = []string{}
			}
			if d.Activities[i].Lobbyists == nil {
				d.Activities[i].Lobbyists = []records.Lobbyist{}
			}
		}
		return d, []string{sortKey, d.ID}, nil
	})
}

// lobbyingPage is a lobbying page's conditions and keyset predicate (q, on unqualified lobbying_disclosures
// columns) and its agency_acted_on with that keyset on the agency rows: the one filter implementation both the
// full-row read (LobbyingDisclosures) and the projected read (PrepareLobbying) use.
type lobbyingPage struct {
	q          *query
	agency     *string
	rowsKeyset []string
}

// lobbyingConditions validates in and builds the filters and keyset predicate of a lobbying page.
func (s *Store) lobbyingConditions(in records.LobbyingDisclosuresInput) (p lobbyingPage, limit int, binding string, err error) {
	if err := records.ValidateText(in); err != nil {
		return lobbyingPage{}, 0, "", err
	}
	binding = bindingOf(lobbyingKeyset.family, lobbyingFilter{in.RegistrantName, in.RegistrantID, in.ClientName,
		in.ClientID, in.LobbyistName, in.FilingYear, in.FilingPeriod, in.IssueArea, in.AgencyActedOn})
	q := &query{where: []string{"deleted_at IS NULL"}}
	if in.RegistrantName != nil {
		q.cond("registrant_name ILIKE %s", likePattern(*in.RegistrantName))
	}
	if in.RegistrantID != nil {
		q.cond("registrant_id = %s", *in.RegistrantID)
	}
	if in.ClientName != nil {
		q.cond("client_name ILIKE %s", likePattern(*in.ClientName))
	}
	if in.ClientID != nil {
		q.cond("client_id = %s", *in.ClientID)
	}
	if in.LobbyistName != nil {
		q.cond("lobbyist_names_search LIKE lower(%s)", likePattern(*in.LobbyistName))
	}
	if in.FilingYear != nil {
		q.cond("filing_year = %s", *in.FilingYear)
	}
	if in.FilingPeriod != nil {
		q.cond("filing_period = %s", *in.FilingPeriod)
	}
	if in.IssueArea != nil {
		q.cond("issue_areas_lower @> ARRAY[lower(%s::text)]", *in.IssueArea) // "def" finds DEF (migration 0106)
	}
	limit, err = s.page(q, lobbyingKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return lobbyingPage{}, 0, "", err
	}
	p = lobbyingPage{q: q, agency: in.AgencyActedOn}
	if in.AgencyActedOn != nil {
		// The same cursor again, as a predicate on the agency rows' copy of the keys.
		rows := &query{args: q.args}
		if _, err := s.page(rows, lobbyingAgencyKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit}); err != nil {
			return lobbyingPage{}, 0, "", err
		}
		q.args = rows.args
		p.rowsKeyset = rows.where
	}
	return p, limit, binding, nil
}

// pageSQL is the page query selecting columns under the page's conditions; it adds arguments to p.q.
func (p lobbyingPage) pageSQL(columns string, limit int) string {
	if p.agency != nil {
		return lobbyingByAgencySQL(columns, p.q, p.rowsKeyset, *p.agency, limit)
	}
	return "SELECT " + columns + " FROM lobbying_disclosures" + p.q.whereSQL() +
		" ORDER BY lobbying_disclosures.sort_posted_at DESC, lobbying_disclosures.id DESC LIMIT " + limitSQL(limit)
}

// lobbyingByAgencySQL is the page query for agency_acted_on (docs/design.md, ordered plans for the slow filters):
// the lower-cased name is one range of lobbying_agency_rows (migration 0105), walked newest first and joined to
// its disclosure for the other conditions, so a page reads about limit+1 rows of each. q holds every other
// condition and the keyset predicate on unqualified lobbying_disclosures columns (the agency rows' columns have
// other names); rowsKeyset is the keyset predicate on the agency rows (none on a first page); columns is the select
// list.
func lobbyingByAgencySQL(columns string, q *query, rowsKeyset []string, agency string, limit int) string {
	cond := q.whereSQL() + " AND s.agency = lower(" + q.arg(agency) + "::text)"
	for _, w := range rowsKeyset {
		cond += " AND " + w
	}
	return "SELECT " + columns + " FROM lobbying_agency_rows s JOIN lobbying_disclosures ON lobbying_disclosures.id = s.disclosure_id" +
		cond + " ORDER BY s.posted DESC, s.disclosure_id DESC LIMIT " + limitSQL(limit)
}
