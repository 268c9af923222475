package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Locating values in JSON already known to be valid (Valid said so, or
// encoding/json re-encoded it), without decoding: what lets a request be
// read in place.

func SkipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// ScanString returns the bounds of the contents of the JSON string starting
// at b[i] == '"': b[start:end] are the contents, b[end] the closing quote
// (end == len(b): the string is not closed); esc reports a backslash
// inside. It jumps from quote to quote (IndexByte): a quote preceded by an
// odd run of backslashes is escaped.
func ScanString(b []byte, i int) (start, end int, esc bool) {
	start = i + 1
	j := start
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return start, len(b), bytes.IndexByte(b[start:], '\\') >= 0
		}
		q := j + k
		n := 0
		for p := q - 1; p >= start && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return start, q, bytes.IndexByte(b[start:q], '\\') >= 0
		}
		j = q + 1
	}
}

// SkipValue skips the (valid) JSON value at b[i] and returns the index after
// it, its kind (the first byte: '"', '{', '[', 'n', 't', 'f', or '0' for a
// number) and whether a string inside it holds a backslash.
func SkipValue(b []byte, i int) (end int, kind byte, esc bool) {
	switch c := b[i]; c {
	case '"':
		_, e, esc := ScanString(b, i)
		return e + 1, '"', esc
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				_, e, sesc := ScanString(b, j)
				esc = esc || sesc
				j = e
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, c, esc
				}
			}
		}
		return len(b), c, esc
	case 'n':
		return i + 4, 'n', false
	case 't':
		return i + 4, 't', false
	case 'f':
		return i + 5, 'f', false
	default:
		j := i
		for j < len(b) && strings.IndexByte("+-.0123456789eE", b[j]) >= 0 {
			j++
		}
		return j, '0', false
	}
}

// Unquote decodes a raw JSON string literal (with its quotes).
func Unquote(quoted []byte) (string, error) {
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return "", fmt.Errorf("graphql_guard: Unquote: %w", err)
	}
	return s, nil
}

// DecodeObject decodes a raw JSON object (a request's variables) with
// numbers kept as json.Number, so coercion sees them exactly; nil for none.
func DecodeObject(raw []byte) (map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("graphql_guard: variables: %w", err)
	}
	return m, nil
}

// MemberOf returns the raw value of obj's member named key (the first one
// whose name has no escapes), or nil. obj is a valid JSON object.
func MemberOf(obj []byte, key string) []byte {
	if len(obj) < 2 || obj[0] != '{' {
		return nil
	}
	i := 1
	for i < len(obj) {
		i = SkipWS(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return nil
		}
		if obj[i] == ',' {
			i = SkipWS(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return nil
		}
		ks, ke, kesc := ScanString(obj, i)
		i = SkipWS(obj, ke+1)
		i = SkipWS(obj, i+1) // ':'
		if i >= len(obj) {
			return nil
		}
		vs := i
		ve, _, _ := SkipValue(obj, i)
		if !kesc && string(obj[ks:ke]) == key {
			return obj[vs:ve]
		}
		i = ve
	}
	return nil
}
