package httpapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
)

// The POST body's decoder (docs/api.md "POST /v1/graphql"). decodeRequestReference is the definition: every
// body's outcome and every 400 message is its. decodeGraphQLRequest first tries decodeCommonRequest, one pass
// over the bodies clients send (the four members, in lower case, each once or more, strings without escapes
// or with them, variables and extensions objects), which answers exactly what the reference answers or
// declines; anything it declines — invalid JSON, other members, other types — goes the reference way.
// Three passes of encoding/json (the body into raw members, the query string, the variables) were a tenth
// of a page's CPU.

// decodeGraphQLRequest parses body into RawParams or returns the 400 message.
func decodeGraphQLRequest(body []byte) (*graphql.RawParams, string) {
	if p, ok := decodeCommonRequest(body); ok {
		return p, ""
	}
	return decodeRequestReference(body)
}

// graphqlRequest is the POST body as the reference decodes it; members are checked for type by hand.
type graphqlRequest struct {
	Query         json.RawMessage `json:"query"`
	Variables     json.RawMessage `json:"variables"`
	OperationName json.RawMessage `json:"operationName"`
	Extensions    json.RawMessage `json:"extensions"`
}

// decodeRequestReference parses body into RawParams or returns the 400 message.
func decodeRequestReference(body []byte) (*graphql.RawParams, string) {
	var req graphqlRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return nil, "Request body is not valid JSON"
	}
	if dec.More() {
		return nil, "Request body must be a single JSON object"
	}
	p := &graphql.RawParams{}
	if len(req.Query) == 0 || json.Unmarshal(req.Query, &p.Query) != nil || isNull(req.Query) {
		return nil, "Request body must have a string member \"query\""
	}
	if len(req.Variables) > 0 && !isNull(req.Variables) {
		if !decodeVariables(req.Variables, p) {
			return nil, "\"variables\" must be a JSON object"
		}
	}
	if len(req.OperationName) > 0 && !isNull(req.OperationName) {
		if json.Unmarshal(req.OperationName, &p.OperationName) != nil {
			return nil, "\"operationName\" must be a string"
		}
	}
	return p, ""
}

// decodeVariables decodes an object of variables into p as gqlgen's own transport does: Int and Float
// variables arrive as json.Number.
func decodeVariables(raw []byte, p *graphql.RawParams) bool {
	vd := json.NewDecoder(bytes.NewReader(raw))
	vd.UseNumber()
	return vd.Decode(&p.Variables) == nil && p.Variables != nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// requestMembers are the members the one-pass decoder reads.
var requestMembers = [4]string{"query", "operationName", "variables", "extensions"}

// decodeCommonRequest is the one-pass decoder; ok false: it declines, and nothing is decided.
func decodeCommonRequest(body []byte) (p *graphql.RawParams, ok bool) {
	sc := requestScanner{b: body}
	if !sc.byte('{') {
		return nil, false
	}
	p = &graphql.RawParams{}
	var vars, ext []byte
	var query, opName []byte
	haveQuery := false
	// A member given twice is the reference's: encoding/json keeps the last value but still rejects the body
	// when an earlier one is invalid, and only the kept value is checked here.
	var seen [4]bool
	if !sc.byte('}') {
		for {
			key, ok := sc.plainString()
			if !ok || !sc.byte(':') {
				return nil, false
			}
			sc.space()
			m := slices.Index(requestMembers[:], string(key))
			if m < 0 || seen[m] {
				return nil, false // another member, one in another case (encoding/json folds case), or a repeat
			}
			seen[m] = true
			switch string(key) {
			case "query":
				if query, ok = sc.stringToken(); !ok {
					return nil, false // null, another type or invalid: the reference's answer
				}
				haveQuery = true
			case "operationName":
				if opName, ok = sc.stringOrNull(); !ok {
					return nil, false
				}
			case "variables":
				if vars, ok = sc.objectOrNull(); !ok {
					return nil, false
				}
			case "extensions":
				if ext, ok = sc.objectOrNull(); !ok {
					return nil, false
				}
			}
			if sc.byte(',') {
				continue
			}
			if sc.byte('}') {
				break
			}
			return nil, false
		}
	}
	sc.space()
	if sc.i != len(body) || !haveQuery {
		return nil, false
	}
	if ext != nil && !json.Valid(ext) {
		return nil, false
	}
	var ok1 bool
	if p.Query, ok1 = decodeStringToken(query); !ok1 {
		return nil, false
	}
	if opName != nil {
		if p.OperationName, ok1 = decodeStringToken(opName); !ok1 {
			return nil, false
		}
	}
	if vars != nil && !decodeVariables(vars, p) {
		return nil, false // invalid JSON inside, answered by the reference
	}
	return p, true
}

// requestScanner walks a request body; it never validates more than the caller asks.
type requestScanner struct {
	b []byte
	i int
}

func (s *requestScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c after white space.
func (s *requestScanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string without escapes after white space (an object's key) and returns its content.
func (s *requestScanner) plainString() ([]byte, bool) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	key := s.b[start : start+end]
	if bytes.IndexByte(key, '\\') >= 0 {
		return nil, false
	}
	s.i = start + end + 1
	return key, true
}

// stringToken reads a string token, quotes included, at the current position.
func (s *requestScanner) stringToken() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++ // the escaped byte; decodeStringToken checks the escape
		case '"':
			tok := s.b[s.i : j+1]
			s.i = j + 1
			return tok, true
		}
	}
	return nil, false
}

// stringOrNull reads a string token, or null (nil, true).
func (s *requestScanner) stringOrNull() ([]byte, bool) {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return nil, true
	}
	return s.stringToken()
}

// objectOrNull reads the extent of an object (its content is checked later by a real decoder), or null
// (nil, true).
func (s *requestScanner) objectOrNull() ([]byte, bool) {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return nil, true
	}
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, false
	}
	depth := 0
	for j := s.i; j < len(s.b); j++ {
		switch s.b[j] {
		case '"':
			for j++; j < len(s.b) && s.b[j] != '"'; j++ {
				if s.b[j] == '\\' {
					j++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				obj := s.b[s.i : j+1]
				s.i = j + 1
				return obj, true
			}
		}
	}
	return nil, false
}

// decodeStringToken decodes a JSON string token: in place when it is plain printable UTF-8 without
// escapes, else by encoding/json, which also refuses what is not valid JSON.
func decodeStringToken(tok []byte) (string, bool) {
	content := tok[1 : len(tok)-1]
	plain := true
	for _, c := range content {
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(content), true
	}
	var v string
	if json.Unmarshal(tok, &v) != nil {
		return "", false
	}
	return v, true
}
