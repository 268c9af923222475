package gqlguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// gqlRequest is a decoded GraphQL-over-HTTP request body.
type gqlRequest struct {
	Query         string
	Variables     map[string]any // nil when absent or null
	OperationName string
}

// requestError is a 400 whose message is shown to the client verbatim.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
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
		var v any
		if err := dec.Decode(&v); err != nil {
			return req, invalidJSON(err)
		}
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
			case nil, map[string]any:
			default:
				return req, badRequest(`"extensions" must be an object or null`)
			}
		default:
			return req, badRequest("Request body has unknown key %q", key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return req, invalidJSON(err)
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) != 0 {
		return req, badRequest("Request body must contain a single JSON object")
	}
	if !hasQuery {
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
