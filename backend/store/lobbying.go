package store

import (
	"context"
	"fmt"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
)

var lobbyingKeyset = keyset{family: "lobbying_disclosures", cols: "(sort_posted_at, id)", casts: []string{"timestamptz", "text"}, op: "<"}

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
	CASE WHEN posted_at IS NULL THEN '-infinity' ELSE to_char(sort_posted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END`

// LobbyingDisclosures returns one page of lobbying filings, newest posted first (unposted last).
func (s *Store) LobbyingDisclosures(ctx context.Context, in records.LobbyingDisclosuresInput) (records.LobbyingDisclosuresPage, error) {
	if err := records.ValidateText(in); err != nil {
		return records.LobbyingDisclosuresPage{}, err
	}
	binding := bindingOf(lobbyingKeyset.family, lobbyingFilter{in.RegistrantName, in.RegistrantID, in.ClientName,
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
		q.cond("civic_lower_array(issue_areas) @> ARRAY[lower(%s::text)]", *in.IssueArea) // "def" finds DEF
	}
	if in.AgencyActedOn != nil {
		q.cond("civic_lower_array(agencies_acted_on) @> ARRAY[lower(%s::text)]", *in.AgencyActedOn)
	}
	limit, err := s.page(q, lobbyingKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return records.LobbyingDisclosuresPage{}, err
	}
	sql := "SELECT " + lobbyingColumns + " FROM lobbying_disclosures" + q.whereSQL() +
		" ORDER BY lobbying_disclosures.sort_posted_at DESC, lobbying_disclosures.id DESC LIMIT " + q.arg(limit+1)
	return queryPage(ctx, s, "lobbying", sql, q.args, limit, binding, func(r pgx.Rows) (records.LobbyingDisclosure, []string, error) {
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
