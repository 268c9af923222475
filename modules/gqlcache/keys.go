package gqlcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// tagList is an entry's tags known when its request starts: the static tags
// of the handler, or else the families of the operation the guard admitted
// (contract.GraphQLOperation.Families); or a change event's comma-separated
// families. It is walked without allocating.
type tagList struct {
	list []string
	csv  string
}

// each yields every non-empty tag.
func (l tagList) each(yield func(string) bool) {
	if l.list != nil {
		for _, t := range l.list {
			if !yield(t) {
				return
			}
		}
		return
	}
	rest := l.csv
	for rest != "" {
		t, after, _ := strings.Cut(rest, ",")
		rest = after
		if t = strings.TrimSpace(t); t != "" && !yield(t) {
			return
		}
	}
}

// appendField appends s, length-prefixed, so that no two sequences of
// fields have the same material.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytesField(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendSentField appends a member as sent: absent (nil) and empty are
// told apart.
func appendSentField(b, s []byte) []byte {
	if s == nil {
		return append(b, 0)
	}
	return appendBytesField(append(b, 1), s)
}

func appendUint(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }

// sumKey is the key of the material in b.
func sumKey(b []byte) cacheKey { return sha256.Sum256(b) }

// buffers are the scratch buffers of key material and request bodies.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // an outsized one is left to the collector
	}
	*b = (*b)[:0]
	buffers.Put(b)
}

// jsonMember returns the raw value of the top-level member name of the JSON
// object doc. found is false when doc has no such member; ok is false when
// doc is not an object that can be read, or has the member twice (which
// value a server takes is then not certain: the request is not cached).
// A member name written with escapes is unescaped before the comparison.
// It does not allocate unless a member name has an escape.
func jsonMember(doc []byte, name string) (value []byte, found, ok bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false, false
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, false, true
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return nil, false, false
		}
		end, escaped := skipString(doc, i)
		if end < 0 {
			return nil, false, false
		}
		key := doc[i+1 : end-1]
		i = skipSpace(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false, false
		}
		start := skipSpace(doc, i+1)
		vend := skipValue(doc, start)
		if vend < 0 {
			return nil, false, false
		}
		if memberNameIs(key, escaped, name) {
			if found {
				return nil, false, false
			}
			value, found = doc[start:vend], true
		}
		i = skipSpace(doc, vend)
		if i >= len(doc) {
			return nil, false, false
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case '}':
			return value, found, true
		default:
			return nil, false, false
		}
	}
	return nil, false, false
}

func memberNameIs(raw []byte, escaped bool, name string) bool {
	if !escaped {
		return string(raw) == name
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s); err != nil {
		return false
	}
	return s == name
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'
// (-1 if unterminated) and whether it has an escape. It jumps from quote to
// quote (bytes.IndexByte) and counts the backslashes before each.
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, bytes.IndexByte(b[i+1:q], '\\') >= 0
		}
		j = q + 1
	}
}

// skipValue returns the index after the value starting at b[i], -1 if it
// does not end. Objects and arrays are matched by depth, strings skipped;
// the value is not validated further (the guard already parsed it).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
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
	for j < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// cacheControl is what the cache reads of a Cache-Control header.
type cacheControl struct {
	noStore, noCache, private bool
	maxAge, sMaxAge           int64 // -1: absent
}

// parseCacheControl reads the directives of the header's values.
func parseCacheControl(values []string) cacheControl {
	cc := cacheControl{maxAge: -1, sMaxAge: -1}
	for _, v := range values {
		for v != "" {
			var d string
			d, v, _ = strings.Cut(v, ",")
			name, arg, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store":
				cc.noStore = true
			case "no-cache":
				cc.noCache = true
			case "private":
				cc.private = true
			case "max-age":
				cc.maxAge = parseSeconds(arg)
			case "s-maxage":
				cc.sMaxAge = parseSeconds(arg)
			}
		}
	}
	return cc
}

// parseSeconds reads a delta-seconds argument; a bad one is 0 (RFC 9111
// 4.2.1: treat an invalid freshness as stale).
func parseSeconds(arg string) int64 {
	n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(arg), `"`), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
