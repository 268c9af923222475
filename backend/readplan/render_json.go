package readplan

import (
	"encoding/json"

	"github.com/civicgate/civicgate/backend/records"
)

// Values the store hands over as JSON text: RegulatoryFiling.agencies (the jsonb column) and text arrays
// (array_to_json). They are decoded as pgx decodes them for the reference path — agencies with encoding/json into
// records.RegulatoryAgency — so both paths see the same values; a value pgx cannot scan (a NULL element, a
// malformed document) is ErrNotCovered: the reference executor answers it.

// RegulatoryAgency members, in agencyColumns.
const (
	agencyID uint8 = iota
	agencyName
	agencySlug
	agencyParentID
)

// appendStrings writes a JSON array of non-null strings (a text array through array_to_json).
func appendStrings(dst, text []byte) ([]byte, error) {
	var elems []*string
	if err := json.Unmarshal(text, &elems); err != nil {
		return dst, ErrNotCovered
	}
	dst = append(dst, '[')
	for i, s := range elems {
		if s == nil { // pgx cannot scan a NULL element into a string
			return dst, ErrNotCovered
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, *s)
	}
	return append(dst, ']'), nil
}

// appendObjects writes items as a JSON list of the objects o selects: __typename from the plan, every other
// member by member (one type's members, entryNested among them).
func appendObjects[T any](o *objectPlan, dst []byte, items []T, member func(dst []byte, item *T, e *entry) ([]byte, error)) ([]byte, error) {
	dst = append(dst, '[')
	for i := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		for j := range o.entries {
			e := &o.entries[j]
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, e.key...)
			if e.kind == entryTypename {
				dst = appendString(dst, e.typeName)
				continue
			}
			var err error
			if dst, err = member(dst, &items[i], e); err != nil {
				return dst, err
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

// appendAgencies writes the agencies column's JSON as the list of RegulatoryAgency objects o selects.
func (o *objectPlan) appendAgencies(dst, text []byte) ([]byte, error) {
	var agencies []records.RegulatoryAgency
	if err := json.Unmarshal(text, &agencies); err != nil {
		return dst, ErrNotCovered
	}
	return appendObjects(o, dst, agencies, agencyMember)
}

func agencyMember(dst []byte, ag *records.RegulatoryAgency, e *entry) ([]byte, error) {
	switch uint8(e.value) {
	case agencyID:
		return appendOptional(dst, ag.AgencyID), nil
	case agencyName:
		return appendString(dst, ag.Name), nil
	case agencySlug:
		return appendOptional(dst, ag.Slug), nil
	case agencyParentID:
		return appendOptional(dst, ag.ParentAgencyID), nil
	}
	return dst, errBadEntry
}

// LobbyingActivity and Lobbyist members, in activityColumns and lobbyistColumns.
const (
	activityIssueArea uint8 = iota
	activityIssueAreaName
	activityDescription
	activityAgenciesActedOn
)

const (
	lobbyistID uint8 = iota
	lobbyistName
	lobbyistCoveredPosition
	lobbyistIsNew
)

// appendActivities writes the activities column's JSON as the list of LobbyingActivity objects o selects, with
// LobbyingDisclosures' empty lists for absent ones.
func (o *objectPlan) appendActivities(dst, text []byte) ([]byte, error) {
	var activities []records.LobbyingActivity
	if err := json.Unmarshal(text, &activities); err != nil {
		return dst, ErrNotCovered
	}
	return appendObjects(o, dst, activities, activityMember)
}

func activityMember(dst []byte, a *records.LobbyingActivity, e *entry) ([]byte, error) {
	switch {
	case e.kind == entryNested: // lobbyists
		return appendObjects(e.items, dst, a.Lobbyists, lobbyistMember)
	case uint8(e.value) == activityIssueArea:
		return appendString(dst, a.IssueArea), nil
	case uint8(e.value) == activityIssueAreaName:
		return appendOptional(dst, a.IssueAreaName), nil
	case uint8(e.value) == activityDescription:
		return appendOptional(dst, a.Description), nil
	case uint8(e.value) == activityAgenciesActedOn:
		dst = append(dst, '[')
		for k, s := range a.AgenciesActedOn {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, s)
		}
		return append(dst, ']'), nil
	}
	return dst, errBadEntry
}

func lobbyistMember(dst []byte, l *records.Lobbyist, e *entry) ([]byte, error) {
	switch uint8(e.value) {
	case lobbyistID:
		return appendOptional(dst, l.LobbyistID), nil
	case lobbyistName:
		return appendString(dst, l.Name), nil
	case lobbyistCoveredPosition:
		return appendOptional(dst, l.CoveredPosition), nil
	}
	// lobbyistIsNew
	if l.IsNew {
		return append(dst, "true"...), nil
	}
	return append(dst, "false"...), nil
}

func appendOptional(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendString(dst, *s)
}
