package store

import "github.com/civicgate/civicgate/backend/records"

// Projected lobbying reads (see projection.go): the selected LobbyingDisclosure columns of a page, under the
// filters, keyset and plans of LobbyingDisclosures (lobbyingConditions).

// LobbyingField is one field of the GraphQL LobbyingDisclosure type.
type LobbyingField uint8

// LobbyingDisclosure fields, in the order their values reach a RowSink. Income and expenses are exact decimal
// text; the text arrays are JSON arrays of their elements; LobbyingActivities is the activities column's JSON.
const (
	LobbyingID LobbyingField = iota
	LobbyingFilingType
	LobbyingFilingTypeDisplay
	LobbyingFilingYear
	LobbyingFilingPeriod
	LobbyingRegistrantID
	LobbyingRegistrantName
	LobbyingClientID
	LobbyingClientName
	LobbyingClientDescription
	LobbyingIncome
	LobbyingExpenses
	LobbyingPostedAt
	LobbyingTerminationDate
	LobbyingIssueAreas
	LobbyingLobbyistNames
	LobbyingAgenciesActedOn
	LobbyingActivities
	LobbyingDocumentURL
	LobbyingSourceURL
	LobbyingLastSyncedAt
)

var lobbyingFieldSQL = []string{"id", "filing_type", "filing_type_display", "filing_year", "filing_period",
	"registrant_id", "registrant_name", "client_id", "client_name", "client_description", "income::text",
	"expenses::text", ts("posted_at"), date("termination_date"), "array_to_json(issue_areas)::text",
	"array_to_json(lobbyist_names)::text", "array_to_json(agencies_acted_on)::text", "activities", "document_url",
	"source_url", ts("last_synced_at")}

// LobbyingFields is the columns a projected lobbying read selects.
type LobbyingFields = FieldSet[LobbyingField]

// lobbyingCheckSQL is what checkLobbying reads: whether a text array holds a NULL element or more than one
// dimension (pgx scans neither into a []string), and the activities.
const lobbyingCheckSQL = "(array_position(issue_areas, NULL) IS NOT NULL OR array_position(lobbyist_names, NULL) IS NOT NULL" +
	" OR array_position(agencies_acted_on, NULL) IS NOT NULL OR array_ndims(issue_areas) > 1" +
	" OR array_ndims(lobbyist_names) > 1 OR array_ndims(agencies_acted_on) > 1) AS cursor_unscannable," +
	" activities AS cursor_activities"

// PrepareLobbying validates in exactly as LobbyingDisclosures does (an *records.InputError for bad text, limit
// or cursor) without touching the database, and builds the page query selecting only fields.
func (s *Store) PrepareLobbying(in records.LobbyingDisclosuresInput, fields LobbyingFields) (PageQuery, error) {
	p, limit, binding, err := s.lobbyingConditions(in)
	if err != nil {
		return PageQuery{}, err
	}
	cols := fields.selectList(lobbyingFieldSQL)
	if cols != "" {
		cols += ", "
	}
	sql := p.pageSQL(cols+lobbyingSortKeySQL+" AS cursor_posted, id AS cursor_id, "+lobbyingCheckSQL, limit)
	return PageQuery{what: "lobbying", sql: sql, args: p.q.params(), limit: limit, binding: binding, width: fields.Len(), keys: 2,
		check: checkLobbying}, nil
}

// checkLobbying reports ErrUnscannable for a disclosure LobbyingDisclosures cannot scan: a text array flagged by
// lobbyingCheckSQL, or activities pgx's JSON decoding (encoding/json into records.LobbyingActivity) refuses.
func checkLobbying(vals [][]byte) error {
	if err := checkFlag(vals); err != nil {
		return err
	}
	if !activitiesDecode(vals[1]) {
		return ErrUnscannable
	}
	return nil
}
