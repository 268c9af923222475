package gqlguard

import (
	"bytes"
	"net/http"
	"strings"
)

// The bearer token must not travel in the request (docs/api.md "Errors").

// scanBearer refuses a request whose body, or any decoded member of it,
// holds token. On the fast path it decodes only the members holding
// escapes, and keeps what it decoded in req. It returns the outcome, or ""
// to go on.
func scanBearer(w http.ResponseWriter, body []byte, req *located, token string) string {
	var bearer bool
	if req.fast {
		bearer = containsToken(body, token)
		var err error
		if !bearer && req.raw.queryEsc {
			if req.query, err = unquote(req.raw.queryQuoted); err != nil {
				panic(err) // validJSON said it decodes
			}
			bearer = strings.Contains(req.query, token)
		}
		if !bearer && req.raw.opEsc {
			if req.opName, err = unquote(req.raw.opQuoted); err != nil {
				panic(err)
			}
			bearer = strings.Contains(req.opName, token)
		}
		if !bearer && req.raw.varsEsc {
			if req.vars, err = decodeVariables(req.raw.vars); err != nil {
				panic(err)
			}
			req.haveVars = true
			bearer = containsInValue(req.vars, token)
		}
	} else {
		bearer = containsToken(body, token) || strings.Contains(req.query, token) ||
			strings.Contains(req.opName, token) || containsInValue(req.vars, token)
	}
	if bearer {
		writeJSON(w, http.StatusBadRequest, messageBody(msgBearerInDocument))
		return outcomeBearer
	}
	return ""
}

// containsToken reports whether b holds token (without converting either).
func containsToken(b []byte, token string) bool {
	var stack [96]byte
	needle := stack[:0]
	if len(token) <= len(stack) {
		needle = append(needle, token...)
	} else {
		needle = []byte(token)
	}
	return bytes.Contains(b, needle)
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
