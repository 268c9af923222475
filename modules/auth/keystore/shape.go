package keystore

import (
	"bytes"
	"net/url"
	"strings"
)

// ShapeMinSecret is how many key characters must follow "cg_live_" or
// "cg_test_" for a string to be key-shaped. A full key has SecretLen; a
// truncated key still leaks most of its secret, so fragments count too, but a
// displayed prefix (PrefixLen, 4 secret characters) or "cg_live_REDACTED" does
// not.
const ShapeMinSecret = 16

// Redacted replaces the secret of every key-shaped string in RedactKeys.
const Redacted = "REDACTED"

// ContainsKeyShape reports whether s contains "cg_live_" or "cg_test_"
// followed by at least ShapeMinSecret base62 characters, where any byte may
// also be percent-encoded (%5F or %5f for '_', and so on; one level of
// encoding). It never allocates, and returns at once when s has neither
// "cg_" nor '%'.
func ContainsKeyShape(s string) bool {
	if !strings.Contains(s, "cg_") && strings.IndexByte(s, '%') < 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if _, _, ok := matchShape(s, i); ok {
			return true
		}
	}
	return false
}

// RedactKeys replaces the key characters after every key-shaped "cg_live_" or
// "cg_test_" in b (as ContainsKeyShape finds them, the prefix kept as written)
// with "REDACTED", in place: it returns b shortened, or b unchanged when
// nothing is key-shaped. The output contains nothing key-shaped.
func RedactKeys(b []byte) []byte {
	if !bytes.Contains(b, []byte("cg_")) && bytes.IndexByte(b, '%') < 0 {
		return b
	}
	w := 0 // b[:w] is the output so far; w ≤ i always (the replacement is shorter than a secret)
	for i := 0; i < len(b); {
		prefixEnd, end, ok := matchShape(b, i)
		if !ok {
			b[w] = b[i]
			w++
			i++
			continue
		}
		w += copy(b[w:], b[i:prefixEnd])
		w += copy(b[w:], Redacted)
		i = end
	}
	return b[:w]
}

// RedactedPath is u's path for a log line or a span attribute, any key shape
// in it redacted (RedactKeys on a copy: u is not changed).
func RedactedPath(u *url.URL) string {
	return string(RedactKeys([]byte(u.Path)))
}

// matchShape reports whether a key shape starts at s[i]: it returns where the
// "cg_<env>_" prefix ends and where the run of key characters after it ends.
// The run also ends where another prefix starts (even inside a %XX, as in
// "%6cg_live_…"), so that a key written right after key-like text is matched
// on its own and its secret never hides inside the text's run.
func matchShape[T string | []byte](s T, i int) (prefixEnd, end int, ok bool) {
	prefixEnd, ok = matchPrefix(s, i)
	if !ok {
		return 0, 0, false
	}
	end = prefixEnd
	count := 0
	for {
		c, n := decodeAt(s, end)
		if n == 0 || !isBase62(c) {
			break
		}
		if prefixWithin(s, end, n) {
			break
		}
		end += n
		count++
	}
	return prefixEnd, end, count >= ShapeMinSecret
}

// prefixWithin reports whether a prefix starts at any of s[i:i+n].
func prefixWithin[T string | []byte](s T, i, n int) bool {
	for o := i; o < i+n; o++ {
		if s[o] == 'c' || s[o] == '%' {
			if _, ok := matchPrefix(s, o); ok {
				return true
			}
		}
	}
	return false
}

// matchPrefix reports whether "cg_live_" or "cg_test_" (each byte literal or
// percent-encoded) starts at s[i], and where it ends.
func matchPrefix[T string | []byte](s T, i int) (int, bool) {
	j, ok := matchLiteral(s, i, "cg_")
	if !ok {
		return 0, false
	}
	if k, ok := matchLiteral(s, j, "live_"); ok {
		return k, true
	}
	return matchLiteral(s, j, "test_")
}

// matchLiteral reports whether lit (each byte literal or percent-encoded)
// starts at s[j], and where it ends.
func matchLiteral[T string | []byte](s T, j int, lit string) (int, bool) {
	for k := 0; k < len(lit); k++ {
		c, n := decodeAt(s, j)
		if n == 0 || c != lit[k] {
			return 0, false
		}
		j += n
	}
	return j, true
}

// decodeAt returns the byte at s[i], percent-decoded when s[i:] starts with
// %XX (hex digits of either case), and how many bytes of s it spans (0 at the
// end of s).
func decodeAt[T string | []byte](s T, i int) (byte, int) {
	if i >= len(s) {
		return 0, 0
	}
	if s[i] == '%' && i+2 < len(s) {
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if ok1 && ok2 {
			return hi<<4 | lo, 3
		}
	}
	return s[i], 1
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isBase62(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
}
