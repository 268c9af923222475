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
