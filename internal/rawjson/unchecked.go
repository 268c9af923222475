package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Locating values in bytes not known to be valid JSON (a response body, a
// request body before its decoder ran): each function reports where a value
// does not end instead of assuming it does, and checks nothing else.

// ValueEnd returns the index after the value starting at b[i], or -1 when it
// does not end. Objects and arrays are matched by depth with strings skipped;
// any other value runs to the next ',', '}', ']' or white space. Nothing
// inside is validated.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		if _, q, _ := ScanString(b, i); q < len(b) {
			return q + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if _, j, _ = ScanString(b, j); j == len(b) {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && strings.IndexByte(",}] \t\r\n", b[j]) < 0 {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// UniqueMember returns the raw value of the top-level member name of the
// JSON object doc. found is false when doc has no such member; ok is false
// when doc is not an object that can be read, or has the member twice (which
// value a reader takes is then not certain). A member name written with
// escapes is unescaped before the comparison. It does not allocate unless a
// member name has an escape.
func UniqueMember(doc []byte, name string) (value []byte, found, ok bool) {
	twice := false
	ok = Members(doc, func(quotedName, v []byte) bool {
		if !MemberNameIs(quotedName, name) {
			return true
		}
		if found {
			twice = true
			return false
		}
		value, found = v, true
		return true
	})
	if !ok || twice {
		return nil, false, false
	}
	return value, found, true
}

// Members calls yield with each top-level member of the JSON object doc, its
// name as written (quoted, escapes undecoded) and its raw value, in order,
// until yield returns false. It reports false when doc is not an object that
// can be read up to where yield stopped (values are delimited, not
// validated: see ValueEnd). It does not allocate.
func Members(doc []byte, yield func(quotedName, value []byte) bool) bool {
	i := SkipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return false
	}
	i = SkipWS(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return true
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return false
		}
		_, ke, _ := ScanString(doc, i)
		if ke == len(doc) {
			return false
		}
		quotedName := doc[i : ke+1]
		i = SkipWS(doc, ke+1)
		if i >= len(doc) || doc[i] != ':' {
			return false
		}
		start := SkipWS(doc, i+1)
		end := ValueEnd(doc, start)
		if end < 0 {
			return false
		}
		if !yield(quotedName, doc[start:end]) {
			return true
		}
		i = SkipWS(doc, end)
		if i >= len(doc) {
			return false
		}
		switch doc[i] {
		case ',':
			i = SkipWS(doc, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

// MemberNameIs reports whether the member name quoted (as written, with its
// quotes) is name; one with escapes is decoded first (allocating), and one
// that does not decode is no name.
func MemberNameIs(quoted []byte, name string) bool {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == name
	}
	var s string
	return json.Unmarshal(quoted, &s) == nil && s == name
}
