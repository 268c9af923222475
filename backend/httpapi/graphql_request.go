package httpapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"

	"github.com/civicgate/civicgate/internal/rawjson"
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
	i := rawjson.SkipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	p = &graphql.RawParams{}
	var vars, ext []byte
	var query, opName []byte
	haveQuery := false
	// A member given twice is the reference's: encoding/json keeps the last value but still rejects the body
	// when an earlier one is invalid, and only the kept value is checked here.
	var seen [4]bool
	if i = rawjson.SkipWS(body, i+1); i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			if i >= len(body) || body[i] != '"' {
				return nil, false
			}
			ks, ke, esc := rawjson.ScanString(body, i)
			if ke == len(body) || esc {
				return nil, false // not closed, or a key with escapes
			}
			key := body[ks:ke]
			if i = rawjson.SkipWS(body, ke+1); i >= len(body) || body[i] != ':' {
				return nil, false
			}
			i = rawjson.SkipWS(body, i+1)
			m := slices.Index(requestMembers[:], string(key))
			if m < 0 || seen[m] {
				return nil, false // another member, one in another case (encoding/json folds case), or a repeat
			}
			seen[m] = true
			switch string(key) {
			case "query":
				if query, i = stringTokenAt(body, i); query == nil {
					return nil, false // null, another type or invalid: the reference's answer
				}
				haveQuery = true
			case "operationName":
				if opName, i = stringTokenAt(body, i); opName == nil && !skipNull(body, &i) {
					return nil, false
				}
			case "variables":
				if vars, i = objectAt(body, i); vars == nil && !skipNull(body, &i) {
					return nil, false
				}
			case "extensions":
				if ext, i = objectAt(body, i); ext == nil && !skipNull(body, &i) {
					return nil, false
				}
			}
			if i = rawjson.SkipWS(body, i); i < len(body) && body[i] == ',' {
				i = rawjson.SkipWS(body, i+1)
				continue
			}
			if i < len(body) && body[i] == '}' {
				i++
				break
			}
			return nil, false
		}
	}
	if rawjson.SkipWS(body, i) != len(body) || !haveQuery {
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

// stringTokenAt returns the string token at b[i], quotes included (its escapes are checked when it is
// decoded), and the index after it; nil and i when there is none.
func stringTokenAt(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] != '"' {
		return nil, i
	}
	if _, end, _ := rawjson.ScanString(b, i); end < len(b) {
		return b[i : end+1], end + 1
	}
	return nil, i
}

// objectAt returns the extent of the object at b[i] (its content is checked later by a real decoder) and
// the index after it; nil and i when there is none.
func objectAt(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] != '{' {
		return nil, i
	}
	if end := rawjson.ValueEnd(b, i); end >= 0 {
		return b[i:end], end
	}
	return nil, i
}

// skipNull consumes a null at b[*i].
func skipNull(b []byte, i *int) bool {
	if bytes.HasPrefix(b[*i:], []byte("null")) {
		*i += 4
		return true
	}
	return false
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
