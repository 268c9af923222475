package request

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/civicgate/civicgate/internal/rawjson"
	"github.com/civicgate/civicgate/modules/contract"
)

// Located is a request's GraphQL members. The usual body is located in
// place (Fast: the members are slices of the body, decoded only as far as a
// later step needs); anything unusual was decoded by the strict decoder,
// and a GET's members come from its URL query.
type Located struct {
	raw  rawRequest
	fast bool
	// query is the decoded query: always on the slow path, on the fast path
	// only once a raw query with escapes had to be decoded (or a persisted
	// document resolved it).
	query   string
	opName  string         // the decoded operationName, when decoded
	opReady bool           // fast path: opName holds the decoded escaped name
	vars    map[string]any // decoded variables, when they had to be decoded
	// haveVars says vars is the decoded variables.
	haveVars bool
	// ext is the raw extensions object and docID the documentId (slow
	// path; on the fast path raw holds them); noQuery: no "query" member.
	ext     []byte
	docID   string
	noQuery bool
	// resolvedBy says where query came from when the request sent a hash or
	// a document id instead of the text ("" when it sent the text).
	resolvedBy string
	// byDocumentID: resolved from a documentId member (replaced when forwarded).
	byDocumentID bool
	// sent holds what the slow path and a GET decoded, as published to the
	// handlers after the guard (the fast path publishes raw's slices); see
	// Published.
	sent contract.GraphQLRequest
}

// Locate finds the GraphQL members of a POST body (or a WebSocket subscribe
// payload). A body that does not decode as a GraphQL-over-HTTP request is
// refused with an *Error.
func Locate(body []byte) (Located, error) {
	if rq, fast := scanRequest(body); fast {
		return Located{raw: rq, fast: true, noQuery: rq.query == nil}, nil
	}
	req, err := decodeRequest(body)
	if err != nil {
		return Located{}, err
	}
	l := Located{
		query: req.Query, opName: req.OperationName, vars: req.Variables, haveVars: true,
		ext: req.Extensions, docID: req.DocumentID, noQuery: !req.HasQuery,
	}
	l.sent = contract.GraphQLRequest{Variables: req.RawVariables, Extensions: req.RawExtensions, Aliased: req.EscapedName}
	if req.HasQuery {
		l.sent.Query = []byte(req.Query)
	}
	if req.OperationName != "" {
		l.sent.OperationName = []byte(req.OperationName)
	}
	if req.DocumentID != "" {
		l.sent.DocumentID = []byte(req.DocumentID)
	}
	return l, nil
}

// FromURLQuery reads a GET request's members from its raw URL query
// (GraphQL over HTTP: query, operationName, variables and extensions as
// JSON). A query that does not hold a request is refused with an *Error.
func FromURLQuery(rawQuery string) (Located, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return Located{}, badRequest("Request URL query is malformed")
	}
	if err := CheckURLNames(rawQuery); err != nil {
		return Located{}, err
	}
	for k, v := range q {
		switch k {
		case "query", "operationName", "variables", "extensions", "documentId":
			if len(v) > 1 {
				return Located{}, badRequest("Request URL query has %q more than once", k)
			}
		}
	}
	req := Located{query: q.Get("query"), opName: q.Get("operationName"), docID: q.Get("documentId"), haveVars: true, noQuery: !q.Has("query")}
	req.sent = contract.GraphQLRequest{Aliased: urlAliasesGraphQL(rawQuery, false)}
	for name, dst := range map[string]*[]byte{"query": &req.sent.Query, "operationName": &req.sent.OperationName,
		"variables": &req.sent.Variables, "extensions": &req.sent.Extensions, "documentId": &req.sent.DocumentID} {
		if v := q.Get(name); v != "" || name == "query" && q.Has(name) {
			*dst = []byte(v)
		}
	}
	if v := q.Get("variables"); v != "" {
		if req.vars, err = rawjson.DecodeObject([]byte(v)); err != nil || req.vars == nil && v != "null" {
			return Located{}, badRequest(`"variables" must be a JSON object or null`)
		}
	}
	if e := q.Get("extensions"); e != "" && e != "null" {
		if !json.Valid([]byte(e)) || strings.TrimSpace(e)[0] != '{' {
			return Located{}, badRequest(`"extensions" must be a JSON object or null`)
		}
		req.ext = []byte(strings.TrimSpace(e))
	}
	if req.noQuery && req.docID == "" && !hasPersistedHash(req.ext) {
		return Located{}, badRequest(`Request URL query must contain a "query" parameter`)
	}
	return req, nil
}

// Fast reports whether the members were located in place (the usual body)
// rather than decoded.
func (l *Located) Fast() bool { return l.fast }

// HasQuery reports whether the request has a "query" member.
func (l *Located) HasQuery() bool { return !l.noQuery }

// Query returns the decoded query text: the text sent, or the document a
// persisted reference resolved to. On the fast path an escaped text is
// decoded once, here.
func (l *Located) Query() string {
	if l.fast && l.resolvedBy == "" && l.query == "" {
		if !l.raw.queryEsc {
			return string(l.raw.query)
		}
		l.query = mustUnquote(l.raw.queryQuoted)
	}
	return l.query
}

// QueryText returns the query as it appears in the body, still JSON-escaped
// when escaped says so, when the request was located in place and sent its
// text (ok); the document cache keys by it, so a hit decodes nothing.
func (l *Located) QueryText() (text []byte, escaped, ok bool) {
	if !l.fast || l.resolvedBy != "" {
		return nil, false, false
	}
	return l.raw.query, l.raw.queryEsc, true
}

// OperationName returns the operationName: raw, the bytes of the body when
// they hold no escapes (nil when absent), else name, decoded.
func (l *Located) OperationName() (raw []byte, name string) {
	if !l.fast {
		return nil, l.opName
	}
	if !l.raw.opEsc {
		return l.raw.op, ""
	}
	if !l.opReady {
		l.opName, l.opReady = mustUnquote(l.raw.opQuoted), true
	}
	return nil, l.opName
}

// Variables returns the raw variables object on the fast path (nil when
// absent or null), and the decoded variables when they were decoded
// (decoded: always on the slow path and for a GET).
func (l *Located) Variables() (raw []byte, vars map[string]any, decoded bool) {
	return l.raw.vars, l.vars, l.haveVars
}

// Extensions returns the raw extensions object (nil when absent or null).
func (l *Located) Extensions() []byte {
	if l.fast {
		return l.raw.ext
	}
	return l.ext
}

// DocumentID returns the GraphQL-over-HTTP documentId ("" when absent).
func (l *Located) DocumentID() string {
	if l.fast && l.raw.docID != nil {
		return string(l.raw.docID)
	}
	return l.docID
}

// QueryHash is the SHA-256 of the query text (APQ's sha256Hash).
func (l *Located) QueryHash() [sha256.Size]byte {
	if !l.fast {
		return sha256.Sum256([]byte(l.query))
	}
	if !l.raw.queryEsc {
		return sha256.Sum256(l.raw.query)
	}
	return sha256.Sum256([]byte(l.Query()))
}

// Resolve records the document a persisted reference (an APQ hash, a
// trusted document's hash or id) resolved to; by says which ("" is not
// allowed), byDocumentID that a documentId member named it.
func (l *Located) Resolve(text, by string, byDocumentID bool) {
	l.query, l.resolvedBy, l.byDocumentID = text, by, byDocumentID
}

// ResolvedBy says how a persisted reference was resolved ("" when the
// request sent its text).
func (l *Located) ResolvedBy() string { return l.resolvedBy }

// ByDocumentID reports whether a documentId member named the document.
func (l *Located) ByDocumentID() bool { return l.byDocumentID }

// mustUnquote decodes a raw string of a body that passed rawjson.Valid.
func mustUnquote(quoted []byte) string {
	s, err := rawjson.Unquote(quoted)
	if err != nil {
		panic(fmt.Errorf("request: a string of valid JSON did not decode: %w", err)) // rawjson.Valid said it decodes
	}
	return s
}
