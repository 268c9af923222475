package gqlguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// Reading and locating the request: the HTTP-level refusals (method, media
// type, body size and read failures) and the body's GraphQL members.

// checkMethodAndType refuses anything but a POST of JSON (or a GET, checked
// elsewhere, when methods allows it); it returns the refusal's outcome, or ""
// to go on.
func (g *Guard) checkMethodAndType(w http.ResponseWriter, r *http.Request) string {
	if r.Method != http.MethodPost || !g.allowPOST {
		w.Header().Set("Allow", g.allowHeader)
		writeJSON(w, http.StatusMethodNotAllowed, messageBody(g.methodMessage))
		return outcomeMethod
	}
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		writeJSON(w, http.StatusUnsupportedMediaType, messageBody(msgUnsupportedMediaType))
		return outcomeMediaType
	}
	return ""
}

func isJSONContentType(ct string) bool {
	if ct == "" {
		return false
	}
	if ct == "application/json" { // the usual value, without parsing
		return true
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if media != "application/json" && !(strings.HasPrefix(media, "application/") && strings.HasSuffix(media, "+json")) {
		return false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return false
	}
	return true
}

// readBodyChecked reads the body within MaxBody; a body over the limit, a
// timed-out read or a failed one is refused, returning the outcome ("" with
// the body when it was read).
func (g *Guard) readBodyChecked(w http.ResponseWriter, r *http.Request) ([]byte, string) {
	if r.ContentLength > g.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
		return nil, outcomeTooLarge
	}
	body, err := readBody(r, g.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
			return nil, outcomeTooLarge
		}
		// The server's read timeout (Caddy's servers/timeouts/read_body) ran
		// out while the client trickled its body: 408, not a malformed body.
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, messageBody(msgBodyTimeout))
			return nil, outcomeBodyTimeout
		}
		writeJSON(w, http.StatusBadRequest, messageBody(msgReadFailed))
		return nil, outcomeBadRequest
	}
	if int64(len(body)) > g.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
		return nil, outcomeTooLarge
	}
	return body, ""
}

// readBody reads at most max+1 bytes of r's body into one buffer sized by
// Content-Length when it is known (io.ReadAll would grow it several times).
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	size := int64(512)
	if r.ContentLength >= 0 && r.ContentLength <= max {
		size = r.ContentLength + 1 // room to see EOF without growing
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		limit := min(int64(cap(buf)), max+1)
		n, err := r.Body.Read(buf[len(buf):limit])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max || err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// located is the request's GraphQL members. The usual body is located in
// place (fast: raw holds the members, decoded only as far as needed);
// anything unusual was decoded by decodeRequest.
type located struct {
	raw  rawRequest
	fast bool
	// query is the decoded query: always on the slow path, on the fast path
	// only once a raw query with escapes had to be decoded.
	query  string
	opName string         // the decoded operationName, when decoded
	rawOp  []byte         // the raw operationName, when it holds no escapes
	vars   map[string]any // decoded variables, when they had to be decoded
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
	// apqHash is the APQ hash a request sent with its query, to register.
	apqHash    persisted.Hash
	apqPending bool
	// sent holds what the slow path and a GET decoded, as published to the
	// handlers after the guard (the fast path publishes raw's slices); see
	// published.
	sent contract.GraphQLRequest
}

// locateRequest finds the GraphQL members of body, refusing one that does
// not decode as a request; it returns the outcome, or "" to go on.
func locateRequest(w http.ResponseWriter, body []byte) (located, string) {
	if rq, fast := scanRequest(body); fast {
		return located{raw: rq, fast: true, noQuery: rq.query == nil}, ""
	}
	req, err := decodeRequest(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody(err.Error()))
		return located{}, outcomeBadRequest
	}
	l := located{
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
	return l, ""
}

// urlValues is a GET request's rewritten URL query.
type urlValues = url.Values

// locateQueryString reads a GET request's members from its URL query
// (GraphQL over HTTP: query, operationName, variables and extensions as
// JSON); it returns the refusal's outcome, or "" to go on.
func locateQueryString(w http.ResponseWriter, r *http.Request) (located, string) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, messageBody("Request URL query is malformed"))
		return located{}, outcomeBadRequest
	}
	for k, v := range q {
		switch k {
		case "query", "operationName", "variables", "extensions", "documentId":
			if len(v) > 1 {
				writeJSON(w, http.StatusBadRequest, messageBody(fmt.Sprintf("Request URL query has %q more than once", k)))
				return located{}, outcomeBadRequest
			}
		}
	}
	req := located{query: q.Get("query"), opName: q.Get("operationName"), docID: q.Get("documentId"), haveVars: true, noQuery: !q.Has("query")}
	req.sent = contract.GraphQLRequest{Aliased: urlAliasesGraphQL(r.URL.RawQuery, false)}
	for name, dst := range map[string]*[]byte{"query": &req.sent.Query, "operationName": &req.sent.OperationName,
		"variables": &req.sent.Variables, "extensions": &req.sent.Extensions, "documentId": &req.sent.DocumentID} {
		if v := q.Get(name); v != "" || name == "query" && q.Has(name) {
			*dst = []byte(v)
		}
	}
	if v := q.Get("variables"); v != "" {
		if req.vars, err = decodeVariables([]byte(v)); err != nil || req.vars == nil && v != "null" {
			writeJSON(w, http.StatusBadRequest, messageBody(`"variables" must be a JSON object or null`))
			return located{}, outcomeBadRequest
		}
	}
	if e := q.Get("extensions"); e != "" && e != "null" {
		if !json.Valid([]byte(e)) || strings.TrimSpace(e)[0] != '{' {
			writeJSON(w, http.StatusBadRequest, messageBody(`"extensions" must be a JSON object or null`))
			return located{}, outcomeBadRequest
		}
		req.ext = []byte(strings.TrimSpace(e))
	}
	if req.noQuery && req.docID == "" && !hasPersistedHash(req.ext) {
		writeJSON(w, http.StatusBadRequest, messageBody(`Request URL query must contain a "query" parameter`))
		return located{}, outcomeBadRequest
	}
	return req, ""
}

// published is the request as the guard decoded it, for the handlers after
// it (docs/design.md D40): the fast path's slices of the body as they are
// (no copy unless operationName had escapes), or what the slow
// path or the URL query decoded. A POST whose URL names a GraphQL parameter
// (any spelling) is Aliased: some servers read URL parameters of a POST too.
func (l *located) published(r *http.Request) contract.GraphQLRequest {
	p := l.sent
	if l.fast {
		p = contract.GraphQLRequest{Variables: l.raw.varsSent, Extensions: l.raw.extSent, DocumentID: l.raw.docID}
		p.Query, p.QueryEscaped = l.raw.query, l.raw.queryEsc // decoded on demand: QueryText
		p.OperationName = l.raw.op
		if l.raw.opEsc {
			if op, err := unquote(l.raw.opQuoted); err == nil {
				p.OperationName = []byte(op)
			}
		}
	}
	p.Persisted = l.resolvedBy != ""
	if r.Method != http.MethodGet && r.URL.RawQuery != "" && urlAliasesGraphQL(r.URL.RawQuery, true) {
		p.Aliased = true
	}
	return p
}

// graphQLParams are the names GraphQL over HTTP gives a meaning to.
var graphQLParams = [...]string{"query", "variables", "operationName", "extensions", "documentId"}

// urlAliasesGraphQL says whether a name in the raw URL query could be read
// as a GraphQL parameter without being spelled exactly as one: written with
// percent-escapes or '+' that decode to one (net/url reads it so, and so do
// the guard and Go upstreams), or equal to one after cutting at '[' or NUL,
// trimming white space and ignoring case (readers that are lenient read it
// so). With anyName, an exact name counts too (a POST's URL). Pairs are
// split at '&' and ';' (some readers split at both; net/url refuses ';').
// A name that does not decode counts as an alias.
func urlAliasesGraphQL(rawQuery string, anyName bool) bool {
	for rawQuery != "" {
		var pair string
		if i := strings.IndexAny(rawQuery, "&;"); i >= 0 {
			pair, rawQuery = rawQuery[:i], rawQuery[i+1:]
		} else {
			pair, rawQuery = rawQuery, ""
		}
		raw, _, _ := strings.Cut(pair, "=")
		name := raw
		if strings.ContainsAny(raw, "%+") {
			var err error
			if name, err = url.QueryUnescape(raw); err != nil {
				return true
			}
		}
		exact := name == raw && isGraphQLParam(name)
		if exact && !anyName {
			continue
		}
		if exact || looseGraphQLParam(name) {
			return true
		}
	}
	return false
}

func isGraphQLParam(name string) bool {
	for _, p := range graphQLParams {
		if name == p {
			return true
		}
	}
	return false
}

// looseGraphQLParam: name is a GraphQL parameter to a lenient reader.
func looseGraphQLParam(name string) bool {
	if i := strings.IndexAny(name, "[\x00"); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimSpace(name)
	for _, p := range graphQLParams {
		if strings.EqualFold(name, p) {
			return true
		}
	}
	return false
}
