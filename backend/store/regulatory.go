package store

import (
	"context"
	"fmt"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
)

var regulatoryKeyset = keyset{family: "regulatory_filings", cols: "(publication_date, id)", casts: []string{"date", "text"}, op: "<"}

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
	if err := records.ValidateText(in); err != nil {
		return records.RegulatoryFilingsPage{}, err
	}
	binding := bindingOf(regulatoryKeyset.family, regulatoryFilter{in.AgencyID, in.AgencyName, in.Type, in.FilingYear, in.FilingPeriod, in.RIN, in.DocketID})
	q := &query{where: []string{"deleted_at IS NULL"}}
	if in.AgencyID != nil {
		q.cond("agency_ids @> ARRAY[%s::text]", *in.AgencyID)
	}
	if in.AgencyName != nil {
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
	limit, err := s.page(q, regulatoryKeyset, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return records.RegulatoryFilingsPage{}, err
	}
	sql := "SELECT " + regulatoryColumns + " FROM regulatory_filings" + q.whereSQL() +
		" ORDER BY regulatory_filings.publication_date DESC, regulatory_filings.id DESC LIMIT " + q.arg(limit+1)
	return queryPage(ctx, s, "regulatory", sql, q.args, limit, binding, func(r pgx.Rows) (records.RegulatoryFiling, []string, error) {
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
