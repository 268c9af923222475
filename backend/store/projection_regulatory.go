package store

import (
	"encoding/json"

	"github.com/civicgate/civicgate/backend/records"
)

// Projected regulatory reads (see projection.go): the selected RegulatoryFiling columns of a page, under the
// filters, keyset and plans of RegulatoryFilings (regulatoryConditions).

// RegulatoryField is one field of the GraphQL RegulatoryFiling type.
type RegulatoryField uint8

// RegulatoryFiling fields, in the order their values reach a RowSink. RegulatoryAgencies is the agencies
// column's JSON text (as pgx would unmarshal it); RegulatoryRins and RegulatoryDocketIDs are JSON arrays of the
// text arrays' elements.
const (
	RegulatoryID RegulatoryField = iota
	RegulatoryDocumentNumber
	RegulatoryType
	RegulatorySubtype
	RegulatoryTitle
	RegulatoryAbstract
	RegulatoryAction
	RegulatoryAgencyID
	RegulatoryAgencyName
	RegulatoryAgencies
	RegulatoryPublicationDate
	RegulatoryFilingYear
	RegulatoryFilingPeriod
	RegulatoryCorrectionOf
	RegulatoryEffectiveOn
	RegulatoryCommentsCloseOn
	RegulatoryRins
	RegulatoryDocketIDs
	RegulatoryCitation
	RegulatorySignificant
	RegulatoryHTMLURL
	RegulatoryPdfURL
	RegulatorySourceURL
	RegulatoryLastSyncedAt
)

var regulatoryFieldSQL = []string{"id", "document_number", "type", "subtype", "title", "abstract", "action",
	"agency_id", "agency_name", "agencies", date("publication_date"), "filing_year", "filing_period", "correction_of",
	date("effective_on"), date("comments_close_on"), "array_to_json(rins)::text", "array_to_json(docket_ids)::text",
	"citation", "significant", "html_url", "pdf_url", "source_url", ts("last_synced_at")}

// RegulatoryFields is the columns a projected regulatory read selects.
type RegulatoryFields = FieldSet[RegulatoryField]

// PrepareRegulatory validates in exactly as RegulatoryFilings does (an *records.InputError for bad text, limit
// or cursor) without touching the database, and builds the page query selecting only fields.
func (s *Store) PrepareRegulatory(in records.RegulatoryFilingsInput, fields RegulatoryFields) (PageQuery, error) {
	p, limit, binding, err := s.regulatoryConditions(in)
	if err != nil {
		return PageQuery{}, err
	}
	cols := fields.selectList(regulatoryFieldSQL)
	if cols != "" {
		cols += ", "
	}
	// The cursor's keys as RegulatoryFilings reads them: the rendered date, then the id.
	sql := p.pageSQL(cols+date("publication_date")+" AS cursor_publication_date, id AS cursor_id, "+regulatoryCheckSQL, limit)
	return PageQuery{what: "regulatory", sql: sql, args: p.q.params(), limit: limit, binding: binding, width: fields.Len(), keys: 2,
		check: checkRegulatory}, nil
}

// regulatoryCheckSQL is what checkRegulatory reads: whether a text array holds a NULL element or more than one
// dimension (pgx scans neither into a []string), and the agencies.
const regulatoryCheckSQL = "(array_position(rins, NULL) IS NOT NULL OR array_position(docket_ids, NULL) IS NOT NULL" +
	" OR array_ndims(rins) > 1 OR array_ndims(docket_ids) > 1) AS cursor_unscannable, agencies AS cursor_agencies"

// checkRegulatory reports ErrUnscannable for a filing RegulatoryFilings cannot scan: a text array flagged by
// regulatoryCheckSQL, or agencies pgx's JSON decoding (encoding/json into records.RegulatoryAgency) refuses.
func checkRegulatory(vals [][]byte) error {
	if err := checkFlag(vals); err != nil {
		return err
	}
	var agencies []records.RegulatoryAgency
	if json.Unmarshal(vals[1], &agencies) != nil {
		return ErrUnscannable
	}
	return nil
}
