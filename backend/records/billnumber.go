package records

import (
	"regexp"
	"strings"
)

// billNumberRE matches bill-number forms such as "H.R. 2882", "HR 2882", "hr2882", "S. 12", "H.J.Res. 7",
// "H. Con. Res. 3" (case-insensitive), capturing the type letters and the number.
var billNumberRE = regexp.MustCompile(`(?i)\b(h\.?\s?j\.?\s?res|s\.?\s?j\.?\s?res|h\.?\s?con\.?\s?res|s\.?\s?con\.?\s?res|h\.?\s?res|s\.?\s?res|h\.?\s?r|s)\.?\s*(\d{1,5})\b`)

// NormalizeSearch folds every bill-number form in q into the single token the stored tsvector holds
// ("hr2882"), leaving the rest of the text for websearch_to_tsquery.
func NormalizeSearch(q string) string {
	// The submatches come from the one match over q: matching a found
	// substring again alone can fail (\b sees other neighbours, and (?i)
	// matched "ſ" as "s"), which made an index out of range (fuzzing found
	// "000ſ0").
	found := billNumberRE.FindAllStringSubmatchIndex(q, -1)
	if found == nil {
		return q
	}
	var b strings.Builder
	last := 0
	for _, m := range found {
		b.WriteString(q[last:m[0]])
		for _, r := range strings.ToLower(q[m[2]:m[3]]) {
			if r >= 'a' && r <= 'z' {
				b.WriteRune(r)
			}
		}
		b.WriteString(q[m[4]:m[5]])
		last = m[1]
	}
	b.WriteString(q[last:])
	return b.String()
}
