package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/civicgate/civicgate/internal/rawjson"
)

// gqlRequest is a decoded GraphQL-over-HTTP request body.
type gqlRequest struct {
	Query         string
	HasQuery      bool
	Variables     map[string]any // nil when absent or null
	OperationName string
	// Extensions is the raw extensions object (nil when absent or null).
	Extensions []byte
	// DocumentID is the GraphQL-over-HTTP persisted document id.
	DocumentID string
	// RawVariables and RawExtensions are the members' JSON as sent (nil
	// when absent); EscapedName: a member name was written with escapes.
	// They are what the guard publishes (contract.GraphQLRequest).
	RawVariables, RawExtensions []byte
	EscapedName                 bool
}

// Error is a request refused with HTTP 400; its message is shown to the
// client verbatim (docs/api.md "Errors").
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// decodeRequest decodes body strictly: one JSON object with a string "query",
// an optional object-or-null "variables", an optional string-or-null
// "operationName" and an optional object-or-null "extensions"; any other key,
// a repeated key, invalid UTF-8 or trailing data is refused. Numbers in
// variables stay json.Number so that coercion sees them exactly.
func decodeRequest(body []byte) (gqlRequest, error) {
	var req gqlRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, badRequest("Request body is empty")
	}
	if !utf8.Valid(body) {
		return req, badRequest("Request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return req, invalidJSON(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return req, badRequest("Request body must be a JSON object")
	}
	seen := map[string]bool{}
	var hasQuery bool
	for dec.More() {
		keyStart := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return req, invalidJSON(err)
		}
		key, ok := tok.(string)
		if !ok {
			return req, badRequest("Request body is not valid JSON")
		}
		if seen[key] {
			return req, badRequest("Request body has duplicate key %q", key)
		}
		seen[key] = true
		valueStart := dec.InputOffset()
		req.EscapedName = req.EscapedName || bytes.IndexByte(body[keyStart:valueStart], '\\') >= 0
		var v any
		if err := dec.Decode(&v); err != nil {
			return req, invalidJSON(err)
		}
		// The value as sent: after the key come white space, ':', white space.
		sent := bytes.TrimLeft(body[valueStart:dec.InputOffset()], " \t\r\n:")
		switch key {
		case "query":
			q, ok := v.(string)
			if !ok {
				return req, badRequest(`"query" must be a string`)
			}
			req.Query, hasQuery = q, true
		case "variables":
			switch x := v.(type) {
			case nil:
			case map[string]any:
				req.Variables = x
			default:
				return req, badRequest(`"variables" must be an object or null`)
			}
			req.RawVariables = sent
		case "operationName":
			switch x := v.(type) {
			case nil:
			case string:
				req.OperationName = x
			default:
				return req, badRequest(`"operationName" must be a string or null`)
			}
		case "extensions":
			switch v.(type) {
			case nil:
			case map[string]any:
				if req.Extensions, err = json.Marshal(v); err != nil {
					return req, badRequest(`"extensions" must be an object or null`)
				}
			default:
				return req, badRequest(`"extensions" must be an object or null`)
			}
			req.RawExtensions = sent
		case "documentId":
			id, ok := v.(string)
			if !ok {
				return req, badRequest(`"documentId" must be a string`)
			}
			req.DocumentID = id
		default:
			if err := misspelledMember(key); err != nil {
				return req, err
			}
			return req, badRequest("Request body has unknown key %q", key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return req, invalidJSON(err)
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) != 0 {
		return req, badRequest("Request body must contain a single JSON object")
	}
	req.HasQuery = hasQuery
	if !hasQuery && req.DocumentID == "" && !hasPersistedHash(req.Extensions) {
		return req, badRequest(`Request body must contain a "query" string`)
	}
	return req, nil
}

func invalidJSON(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return badRequest("Request body is not valid JSON: %s (at byte %d)", syn.Error(), syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return badRequest("Request body is not valid JSON: unexpected end of input")
	}
	return badRequest("Request body is not valid JSON")
}

// rawRequest is a request body located without decoding: byte ranges of the
// body (no copies). Strings are the raw contents between the quotes, still
// JSON-escaped; the *Esc flags say whether a backslash occurs in them.
type rawRequest struct {
	query, queryQuoted []byte
	queryEsc           bool
	op, opQuoted       []byte // nil when absent or null
	opEsc              bool
	vars               []byte // the raw object; nil when absent or null
	varsEsc            bool
	ext                []byte // the raw extensions object; nil when absent or null
	// varsSent and extSent are those members as sent, null included (nil
	// when absent): what the guard publishes (contract.GraphQLRequest).
	varsSent, extSent []byte
	docID             []byte // the raw documentId contents (no escapes), nil when absent
}

// scanRequest is the allocation-free path of decodeRequest for the common
// case: a valid UTF-8, valid JSON object whose keys (without escapes, no
// repeats) are among query, variables, operationName and extensions, with a
// string query, an object-or-null variables and extensions and a
// string-or-null operationName. Anything else reports false, and the caller
// uses decodeRequest, which gives the exact refusal (or accepts the rare
// valid body this path does not handle, such as escaped key names).
func scanRequest(body []byte) (rawRequest, bool) {
	var rq rawRequest
	if !utf8.Valid(body) || !rawjson.Valid(body) {
		return rq, false
	}
	i := rawjson.SkipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return rq, false
	}
	i++
	var seen uint8
	for {
		i = rawjson.SkipWS(body, i)
		if body[i] == '}' {
			break
		}
		if body[i] == ',' {
			i = rawjson.SkipWS(body, i+1)
		}
		ks, ke, kesc := rawjson.ScanString(body, i)
		if kesc {
			return rq, false
		}
		var bit uint8
		switch string(body[ks:ke]) {
		case "query":
			bit = 1
		case "variables":
			bit = 2
		case "operationName":
			bit = 4
		case "extensions":
			bit = 8
		case "documentId":
			bit = 16
		default:
			return rq, false
		}
		if seen&bit != 0 {
			return rq, false
		}
		seen |= bit
		i = rawjson.SkipWS(body, ke+1)
		i = rawjson.SkipWS(body, i+1) // ':'
		vs := i
		ve, kind, esc := rawjson.SkipValue(body, i)
		i = ve
		switch bit {
		case 1:
			if kind != '"' {
				return rq, false
			}
			rq.query, rq.queryQuoted, rq.queryEsc = body[vs+1:ve-1], body[vs:ve], esc
		case 2:
			rq.varsSent = body[vs:ve]
			switch kind {
			case 'n':
			case '{':
				rq.vars, rq.varsEsc = body[vs:ve], esc
			default:
				return rq, false
			}
		case 4:
			switch kind {
			case 'n':
			case '"':
				rq.op, rq.opQuoted, rq.opEsc = body[vs+1:ve-1], body[vs:ve], esc
			default:
				return rq, false
			}
		case 8:
			rq.extSent = body[vs:ve]
			switch kind {
			case 'n':
			case '{':
				rq.ext = body[vs:ve]
			default:
				return rq, false
			}
		case 16:
			if kind != '"' || esc {
				return rq, false
			}
			rq.docID = body[vs+1 : ve-1]
		}
	}
	return rq, seen&1 != 0 || rq.docID != nil || hasPersistedHash(rq.ext)
}
