package request

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"

	"github.com/civicgate/civicgate/internal/rawjson"
)

// The bearer token must not travel in the request (docs/api.md "Errors").

// ContainsBearer reports whether body, or any decoded member of the request
// located in it, holds token (JSON escapes decoded). On the fast path it
// decodes only the members holding escapes, and keeps what it decoded for
// the later steps.
func (l *Located) ContainsBearer(body []byte, token string) bool {
	if !l.fast {
		return containsToken(body, token) || strings.Contains(l.query, token) ||
			strings.Contains(l.opName, token) || containsInValue(l.vars, token)
	}
	if containsToken(body, token) {
		return true
	}
	if l.raw.queryEsc && strings.Contains(l.Query(), token) {
		return true
	}
	if l.raw.opEsc {
		if _, name := l.OperationName(); strings.Contains(name, token) {
			return true
		}
	}
	if l.raw.varsEsc {
		vars, err := rawjson.DecodeObject(l.raw.vars)
		if err != nil {
			panic(fmt.Errorf("request: variables of valid JSON did not decode: %w", err)) // rawjson.Valid said it decodes
		}
		l.vars, l.haveVars = vars, true
		return containsInValue(l.vars, token)
	}
	return false
}

// containsToken reports whether b holds token, reading the token in place
// (bytes.Contains only reads it): an access token is longer than any stack
// buffer worth zeroing per request, and []byte(token) would copy it to the heap.
func containsToken(b []byte, token string) bool {
	return bytes.Contains(b, unsafe.Slice(unsafe.StringData(token), len(token)))
}

// containsInValue reports whether token occurs in a decoded JSON value
// (string values and object keys, at any depth).
func containsInValue(v any, token string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, token)
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, token) || containsInValue(e, token) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsInValue(e, token) {
				return true
			}
		}
	}
	return false
}
