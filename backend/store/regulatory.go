package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
)

var regulatoryKeyset = keyset{family: "regulatory_filings", cols: "(publication_date, id)", casts: []string{"date", "text"}, op: "<"}

// regulatoryAgencyKeyset is the same order (and cursor) on regulatory_agency_name_rows s, whose keys triggers
// keep equal to the filing's (migration 0105).
var regulatoryAgencyKeyset = keyset{family: "regulatory_filings", cols: "(s.pub_date, s.filing_id)", casts: []string{"date", "text"}, op: "<"}

type regulatoryFilter struct {
	AgencyID     *string `json:"ai,omitempty"`
	AgencyName   *string `json:"an,omitempty"`
	Type         *string `json:"t,omitempty"`
	FilingYear   *int    `json:"y,omitempty"`
	FilingPeriod *string `json:"p,omitempty"`
	RIN          *string `json:"r,omitempty"`
	DocketID     *string `json:"d,omitempty"`
}

var regulatoryColumns = `id, document_number, type, subtype, title, abstract, action, agency_id, agency_name, agencies, ` +
	date("publication_date") + `, filing_year, filing_period, correction_of, ` + date("effective_on") + `, ` +
	date("comments_close_on") + `, rins, docket_ids, citation, significant, html_url, pdf_url, source_url, ` + ts("last_synced_at")

// RegulatoryFilings returns one page of Federal Register documents, newest publication first.
func (s *Store) RegulatoryFilings(ctx context.Context, in records.RegulatoryFilingsInput) (records.RegulatoryFilingsPage, error) {
	p, limit, binding, err := s.regulatoryConditions(in)
	if err != nil {
		return records.RegulatoryFilingsPage{}, err
	}
	sql := p.pageSQL(regulatoryColumns, limit) // before reading args: it adds arguments
	return queryPage(ctx, s, "regulatory", sql, p.q.params(), limit, binding, func(r pgx.Rows) (records.RegulatoryFiling, []string, error) {
		var f records.RegulatoryFiling
		err := r.Scan(&f.ID, &f.DocumentNumber, &f.Type, &f.Subtype, &f.Title, &f.Abstract, &f.Action, &f.AgencyID,
			&f.AgencyName, &f.Agencies, &f.PublicationDate, &f.FilingYear, &f.FilingPeriod, &f.CorrectionOf,
			&f.EffectiveOn, &f.CommentsCloseOn, &f.Rins, &f.DocketIDs, &f.Citation, &f.Significant, &f.HTMLURL,
			&f.PdfURL, &f.SourceURL, &f.LastSyncedAt)
		if err != nil {
			return f, nil, fmt.Errorf("store: scan regulatory filing: %w", err)
		}
		if f.Agencies == nil {
			f.Agencies = []records.RegulatoryAgency{}
		}
		return f, []string{f.PublicationDate, f.ID}, nil
	})
}

// regulatoryPage is a regulatory page's conditions and keyset predicate (q, on unqualified regulatory_filings
// columns) and the plan its filters take: the one filter implementation both the full-row read
// (RegulatoryFilings) and the projected read (PrepareRegulatory) use.
type regulatoryPage struct {
	q          *query
	byAgency   bool     // an agency_name substring read through the agency rows
	agency     string   // byAgency: the substring
	rowsKeyset []string // byAgency: the keyset predicate on the agency rows
	filtered   bool     // byAgency: other conditions than deleted_at
	exact      bool     // a RIN or docket: the few matches first
}

// regulatoryConditions validates in and builds the filters and keyset predicate of a regulatory page.
func (s *Store) regulatoryConditions(in records.RegulatoryFilingsInput) (p regulatoryPage, limit int, binding string, err error) {
	if err := records.ValidateText(in); err != nil {
		return regulatoryPage{}, 0, "", err
	}
	binding = bindingOf(regulatoryKeyset.family, regulatoryFilter{in.AgencyID, in.AgencyName, in.Type, in.FilingYear, in.FilingPeriod, in.RIN, in.DocketID})
	q := &query{where: []string{"deleted_at IS NULL"}}
	if in.AgencyID != nil {
		q.cond("agency_ids @> ARRAY[%s::text]", *in.AgencyID)
	}
	// An empty substring matches every filing (also those listing no agency), and one spanning a line break
	// can only match the newline-joined names: both keep the plain filter (docs/api.md: substring of any name).
	// A RIN or docket matches a handful of filings: those are found first (below), the agency among them.
	exact := in.RIN != nil || in.DocketID != nil
	byAgency := !exact && in.AgencyName != nil && *in.AgencyName != "" && !strings.Contains(*in.AgencyName, "\n")
	if in.AgencyName != nil && !byAgency {
		q.cond(`agency_names_search LIKE lower(%s)`, likePattern(*in.AgencyName))
	}
	if in.Type != nil {
		q.cond("type = %s", *in.Type)
	}
	if in.FilingYear != nil {
		q.cond("filing_year = %s", *in.FilingYear)
	}
	if in.FilingPeriod != nil {
		q.cond("filing_period = %s", *in.FilingPeriod)
	}
	if in.RIN != nil {
		q.cond("civic_lower_array(rins) @> ARRAY[lower(%s::text)]", *in.RIN)
	}
	if in.DocketID != nil {
		q.cond("civic_lower_array(docket_ids) @> ARRAY[lower(%s::text)]", *in.DocketID)
	}
	filtered := len(q.where) > 1 // more than deleted_at IS NULL
	limit, err = s.page(q, regulatoryKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return regulatoryPage{}, 0, "", err
	}
	p = regulatoryPage{q: q, byAgency: byAgency, filtered: filtered, exact: exact}
	if byAgency {
		// The same cursor again, as a predicate on the agency rows' copy of the keys.
		rows := &query{args: q.args}
		if _, err := s.page(rows, regulatoryAgencyKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit}); err != nil {
			return regulatoryPage{}, 0, "", err
		}
		q.args = rows.args
		p.agency, p.rowsKeyset = *in.AgencyName, rows.where
	}
	return p, limit, binding, nil
}

// pageSQL is the page query selecting columns under the page's conditions; it adds arguments to p.q.
func (p regulatoryPage) pageSQL(columns string, limit int) string {
	q := p.q
	switch {
	case p.byAgency:
		return regulatoryByAgencySQL(columns, q, p.rowsKeyset, p.agency, limit, p.filtered)
	case p.exact:
		// Materialised, the matches come from the GIN index of the lower-cased codes and are sorted: the planner
		// otherwise walks the order index expecting a match soon, and reads every filing when none matches.
		return "WITH hits AS MATERIALIZED (SELECT id FROM regulatory_filings" + q.whereSQL() + ")" +
			" SELECT " + columns + " FROM regulatory_filings WHERE id IN (SELECT id FROM hits)" +
			" ORDER BY regulatory_filings.publication_date DESC, regulatory_filings.id DESC LIMIT " + limitSQL(limit)
	default:
		return "SELECT " + columns + " FROM regulatory_filings" + q.whereSQL() +
			" ORDER BY regulatory_filings.publication_date DESC, regulatory_filings.id DESC LIMIT " + limitSQL(limit)
	}
}

// regulatoryAgencyProbes is how many matching agency names are read one ordered range each; a substring matching
// more names matches densely enough that walking the order index finds a page sooner.
const regulatoryAgencyProbes = 16

// regulatoryByAgencySQL is the page query for an agency_name substring (docs/design.md, ordered plans for the
// slow filters): the substring is matched against the lower-cased agency names (regulatory_agency_names); with at
// most regulatoryAgencyProbes of them, each name's newest limit+1 live filings come from its range of
// regulatory_agency_name_rows and the page is the newest of those; with more, the order index is walked with the
// substring filter as before. q holds every other condition and the keyset predicate on unqualified
// regulatory_filings columns; rowsKeyset is the keyset predicate on the agency rows (none on a first page).
// Agency rows exist only for live filings, so without other conditions (filtered false) they are not joined.
// columns is the select list.
func regulatoryByAgencySQL(columns string, q *query, rowsKeyset []string, agency string, limit int, filtered bool) string {
	pattern, lim := q.arg(likePattern(agency)), limitSQL(limit)
	where := q.whereSQL()
	onRows := " WHERE s.agency = n.agency"
	if filtered {
		onRows = " JOIN regulatory_filings ON regulatory_filings.id = s.filing_id" + where + " AND s.agency = n.agency"
	}
	for _, w := range rowsKeyset {
		onRows += " AND " + w
	}
	count := "(SELECT count(*) FROM names)"
	order := " ORDER BY publication_date DESC, id DESC LIMIT " + lim
	return "WITH names AS MATERIALIZED (SELECT agency FROM regulatory_agency_names WHERE agency LIKE lower(" + pattern + "))" +
		" SELECT " + columns + " FROM regulatory_filings WHERE id IN (" +
		"SELECT x.filing_id FROM names n CROSS JOIN LATERAL (SELECT s.filing_id FROM regulatory_agency_name_rows s" + onRows +
		" ORDER BY s.pub_date DESC, s.filing_id DESC LIMIT " + lim + ") x" +
		" WHERE " + count + " <= " + strconv.Itoa(regulatoryAgencyProbes) +
		" UNION ALL (SELECT id FROM regulatory_filings" + where + " AND agency_names_search LIKE lower(" + pattern + ")" +
		" AND " + count + " > " + strconv.Itoa(regulatoryAgencyProbes) + order + "))" + order
}
