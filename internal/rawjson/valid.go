// Package rawjson reads JSON in place: a validity check as exact as
// encoding/json.Valid and faster on a body that is mostly one long string,
// and helpers that locate strings, values and object members in JSON
// already known to be valid, or in any bytes with each end checked
// (ValueEnd, UniqueMember). It decodes nothing unless asked (Unquote,
// DecodeObject). graphql_guard's request step uses it to locate a body's
// members, its analysis and variables steps to read limits and scalar
// variables from the raw variables text; graphql_cache looks for a
// response's errors member with it, and recordsd's one-pass request decoder
// (docs/design.md D58) reads a body's members with it.
package rawjson

import "encoding/json"

// Valid reports whether b is one valid JSON value (RFC 8259), exactly as
// encoding/json.Valid does, in one tight pass: the request body is mostly
// one long "query" string, and json.Valid's per-byte state machine was half
// of the guard's own CPU on a cached request (BENCHMARKS.md). Nesting deeper
// than maxFastDepth is left to json.Valid. FuzzValidJSON holds the two equal.
func Valid(b []byte) bool {
	var stack [maxFastDepth]byte // '{' or '['
	depth := 0
	i := SkipWS(b, 0)
	for {
		// a value at b[i]
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth == maxFastDepth {
				return json.Valid(b)
			}
			stack[depth] = c
			depth++
			i = SkipWS(b, i+1)
			if i < len(b) && ((c == '{' && b[i] == '}') || (c == '[' && b[i] == ']')) {
				depth--
				i++
				goto after
			}
			if c == '{' {
				if i = validMemberName(b, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case 't':
			if !hasAt(b, i, "true") {
				return false
			}
			i += 4
		case 'f':
			if !hasAt(b, i, "false") {
				return false
			}
			i += 5
		case 'n':
			if !hasAt(b, i, "null") {
				return false
			}
			i += 4
		default:
			if i = validNumber(b, i); i < 0 {
				return false
			}
		}
	after:
		// after a value: close containers, or a separator and the next value
		for {
			i = SkipWS(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[depth-1]
			switch {
			case b[i] == ',':
				i = SkipWS(b, i+1)
				if top == '{' {
					if i = validMemberName(b, i); i < 0 {
						return false
					}
				}
			case (top == '{' && b[i] == '}') || (top == '[' && b[i] == ']'):
				depth--
				i++
				continue
			default:
				return false
			}
			break
		}
	}
}

const maxFastDepth = 64

// validMemberName checks `"name" :` at b[i] and returns the index of the
// member's value (white space skipped), or -1.
func validMemberName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	if i = SkipWS(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipWS(b, i+1)
}

func hasAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// stringPlain marks the bytes a JSON string may hold without a closer look.
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString checks the string starting at b[i] == '"' and returns the
// index after its closing quote, or -1.
func validString(b []byte, i int) int {
	i++
	for {
		for i < len(b) && stringPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// validNumber checks the number starting at b[i] and returns the index after
// it, or -1.
func validNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	return i
}
