package records

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzNormalizeSearch: folding bill numbers never panics, keeps valid UTF-8 valid, never grows the text,
// and is idempotent (a folded query folds to itself).
func FuzzNormalizeSearch(f *testing.F) {
	for _, s := range []string{"H.R. 2882", "hr2882 water", "S. 12 and H.J.Res. 7", "H. Con. Res. 3", "s", "h.r.", "HR 999999", "é H.R.1 ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out := NormalizeSearch(q)
		if utf8.ValidString(q) && !utf8.ValidString(out) {
			t.Fatalf("%q folded to invalid UTF-8 %q", q, out)
		}
		if len(out) > len(q) {
			t.Fatalf("%q grew to %q", q, out)
		}
		if again := NormalizeSearch(out); again != out {
			t.Fatalf("not idempotent: %q → %q → %q", q, out, again)
		}
		if strings.TrimSpace(q) == "" && out != q {
			t.Fatalf("blank %q changed to %q", q, out)
		}
	})
}
