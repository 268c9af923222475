package gqlcache

import (
	"crypto/sha256"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
)

// maxVaryHeaders bounds the request headers one answer may vary on; an
// answer naming more is not stored (detail=vary).
const maxVaryHeaders = 8

// varyNames reads the upstream's Vary: the request header names the answer
// depends on, canonical, sorted, without duplicates and without
// Accept-Encoding (a stored answer is never encoded: identity suits every
// request). ok is false for `Vary: *` or more than maxVaryHeaders names: the
// answer is not stored (docs/design.md D40).
func varyNames(values []string) (names []string, ok bool) {
	for _, v := range values {
		for v != "" {
			var name string
			name, v, _ = strings.Cut(v, ",")
			name = strings.TrimSpace(name)
			switch {
			case name == "":
				continue
			case name == "*":
				return nil, false
			}
			name = textproto.CanonicalMIMEHeaderKey(name)
			if name == "Accept-Encoding" || slices.Contains(names, name) {
				continue
			}
			if names = append(names, name); len(names) > maxVaryHeaders {
				return nil, false
			}
		}
	}
	slices.Sort(names)
	return names, true
}

// varySum is the digest of the request's values of the headers names (its
// field lines of each, in order, length-prefixed): an entry with a Vary is
// served only to a request with the same digest (RFC 9111 4.1).
func varySum(names []string, h http.Header) [sha256.Size]byte {
	var stack [256]byte
	b := stack[:0]
	for _, name := range names {
		vals := h[name]
		b = appendField(b, name)
		b = appendUint(b, uint64(len(vals)))
		for _, v := range vals {
			b = appendField(b, v)
		}
	}
	return sha256.Sum256(b)
}

// servesRequest says whether e may answer a request with headers h: it has
// no Vary, or the request's values of its Vary headers are the ones its
// answer was fetched with.
func (e *entry) servesRequest(h http.Header) bool {
	return e.vary == nil || varySum(e.vary, h) == e.varySum
}
