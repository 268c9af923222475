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
	return billNumberRE.ReplaceAllStringFunc(q, func(m string) string {
		sub := billNumberRE.FindStringSubmatch(m)
		var b strings.Builder
		for _, r := range strings.ToLower(sub[1]) {
			if r >= 'a' && r <= 'z' {
				b.WriteRune(r)
			}
		}
		return b.String() + sub[2]
	})
}
