package records

import "strconv"

// Ordinal writes n with its English ordinal suffix (1st, 2nd, 3rd, 11th, 117th, 121st): how congress.gov names a
// Congress in a bill's page URL, which the mirror and the seed data both build.
func Ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}
