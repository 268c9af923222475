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

// appendAgencies writes the agencies column's JSON as the list of RegulatoryAgency objects o selects.
func (o *objectPlan) appendAgencies(dst, text []byte) ([]byte, error) {
	var agencies []records.RegulatoryAgency
	if err := json.Unmarshal(text, &agencies); err != nil {
		return dst, ErrNotCovered
	}
	dst = append(dst, '[')
	for i := range agencies {
		if i > 0 {
			dst = append(dst, ',')
		}
		ag := &agencies[i]
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
			var v *string
			switch uint8(e.value) {
			case agencyID:
				v = ag.AgencyID
			case agencyName:
				v = &ag.Name
			case agencySlug:
				v = ag.Slug
			case agencyParentID:
				v = ag.ParentAgencyID
			default:
				return dst, errBadEntry
			}
			if v == nil {
				dst = append(dst, "null"...)
			} else {
				dst = appendString(dst, *v)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
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
	dst = append(dst, '[')
	for i := range activities {
		if i > 0 {
			dst = append(dst, ',')
		}
		a := &activities[i]
		dst = append(dst, '{')
		for j := range o.entries {
			e := &o.entries[j]
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, e.key...)
			switch {
			case e.kind == entryTypename:
				dst = appendString(dst, e.typeName)
			case e.kind == entryNested: // lobbyists
				dst = e.items.appendLobbyists(dst, a.Lobbyists)
			case uint8(e.value) == activityIssueArea:
				dst = appendString(dst, a.IssueArea)
			case uint8(e.value) == activityIssueAreaName:
				dst = appendOptional(dst, a.IssueAreaName)
			case uint8(e.value) == activityDescription:
				dst = appendOptional(dst, a.Description)
			case uint8(e.value) == activityAgenciesActedOn:
				dst = append(dst, '[')
				for k, s := range a.AgenciesActedOn {
					if k > 0 {
						dst = append(dst, ',')
					}
					dst = appendString(dst, s)
				}
				dst = append(dst, ']')
			default:
				return dst, errBadEntry
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

func (o *objectPlan) appendLobbyists(dst []byte, lobbyists []records.Lobbyist) []byte {
	dst = append(dst, '[')
	for i := range lobbyists {
		if i > 0 {
			dst = append(dst, ',')
		}
		l := &lobbyists[i]
		dst = append(dst, '{')
		for j := range o.entries {
			e := &o.entries[j]
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, e.key...)
			switch {
			case e.kind == entryTypename:
				dst = appendString(dst, e.typeName)
			case uint8(e.value) == lobbyistID:
				dst = appendOptional(dst, l.LobbyistID)
			case uint8(e.value) == lobbyistName:
				dst = appendString(dst, l.Name)
			case uint8(e.value) == lobbyistCoveredPosition:
				dst = appendOptional(dst, l.CoveredPosition)
			default: // lobbyistIsNew
				if l.IsNew {
					dst = append(dst, "true"...)
				} else {
					dst = append(dst, "false"...)
				}
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendOptional(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendString(dst, *s)
}
