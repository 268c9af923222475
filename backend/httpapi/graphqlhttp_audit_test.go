package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The server audits of graphql-http v1.22.4 (github.com/graphql/graphql-http, src/audits/server.ts: the
// GraphQL-over-HTTP conformance suite), ported to Go against recordsd's POST /graphql. Every MUST and SHOULD
// audit must pass; a MAY that fails is only logged (recordsd takes no GET: docs/api.md "POST /v1/graphql").
// docs/design.md D42.

type auditLevel string

const (
	auditMust   auditLevel = "MUST"
	auditShould auditLevel = "SHOULD"
	auditMay    auditLevel = "MAY"
)

type auditAnswer struct {
	status int
	ctype  string
	body   []byte
}

// executionResult decodes the answer as a GraphQL response: which members it has.
func (a auditAnswer) executionResult() (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &m); err != nil {
		return nil, fmt.Errorf("body %q is not a JSON object: %v", a.body, err)
	}
	return m, nil
}

type audit struct {
	id     string
	level  auditLevel
	name   string
	method string
	accept string // "" sends no Accept
	ctype  string // "" sends no Content-Type
	body   string // "" sends no body
	check  func(a auditAnswer) error
}

func wantStatus(want int) func(auditAnswer) error {
	return func(a auditAnswer) error {
		if a.status != want {
			return fmt.Errorf("status %d, want %d (body %s)", a.status, want, a.body)
		}
		return nil
	}
}

func wantStatusBetween(lo, hi int) func(auditAnswer) error {
	return func(a auditAnswer) error {
		if a.status < lo || a.status > hi {
			return fmt.Errorf("status %d, want %d..%d (body %s)", a.status, lo, hi, a.body)
		}
		return nil
	}
}

func wantContentType(status int, media string) func(auditAnswer) error {
	return func(a auditAnswer) error {
		if a.status != status || !strings.Contains(a.ctype, media) {
			return fmt.Errorf("status %d Content-Type %q, want %d and %q (body %s)", a.status, a.ctype, status, media, a.body)
		}
		return nil
	}
}

// wantMember checks status and whether the GraphQL response has member (has) or not.
func wantMember(status int, member string, has bool) func(auditAnswer) error {
	return func(a auditAnswer) error {
		if status != 0 && a.status != status {
			return fmt.Errorf("status %d, want %d (body %s)", a.status, status, a.body)
		}
		m, err := a.executionResult()
		if err != nil {
			return err
		}
		if _, ok := m[member]; ok != has {
			return fmt.Errorf("member %q present = %v, want %v (body %s)", member, ok, has, a.body)
		}
		return nil
	}
}

func graphqlHTTPAudits() []audit {
	const (
		gr       = "application/graphql-response+json"
		js       = "application/json"
		typename = `{"query":"{ __typename }"}`
		notJSON  = `{ "not a JSON`
		badQuery = `{"query":"{ 8f31403dfe404bccbb0e835f2629c6a7 }"}`
		coerce   = `{"query":"query CoerceFailure($id: ID!){ __typename }","variables":{"id":null}}`
		typeVars = `{"query":"query Type($name: String!) { __type(name: $name) { name } }","variables":{"name":"sometype"}}`
	)
	post := func(id string, level auditLevel, name, accept, body string, check func(auditAnswer) error) audit {
		return audit{id: id, level: level, name: name, method: http.MethodPost, accept: accept, ctype: js, body: body, check: check}
	}
	a := []audit{
		post("22EB", auditShould, "accept application/graphql-response+json and match the content-type", gr, typename, wantContentType(200, gr)),
		post("4655", auditMust, "accept application/json and match the content-type", js, typename, wantContentType(200, js)),
		post("47DE", auditShould, "accept */* and use application/json for the content-type", "*/*", typename, wantContentType(200, js)),
		post("80D8", auditShould, "assume application/json content-type when accept is missing", "", typename, wantContentType(200, js)),
		post("82A3", auditMust, "use utf-8 encoding when responding", "", typename, func(a auditAnswer) error {
			if err := wantStatus(200)(a); err != nil {
				return err
			}
			if !json.Valid(a.body) { // encoding/json rejects invalid UTF-8 inside strings only when asked: check it all
				return fmt.Errorf("body %q is not JSON", a.body)
			}
			return nil
		}),
		{id: "BF61", level: auditMust, name: "accept utf-8 encoded request", method: http.MethodPost, ctype: js + "; charset=utf-8", body: `{"query":"{ __typename }"}`, check: wantStatus(200)},
		post("78D5", auditMust, "assume utf-8 in request if encoding is unspecified", "", typename, wantStatus(200)),
		post("2C94", auditMust, "accept POST requests", "", typename, wantStatus(200)),
		{id: "5A70", level: auditMay, name: "accept application/x-www-form-urlencoded formatted GET requests", method: http.MethodGet, check: wantStatus(200)},
		{id: "9C48", level: auditMay, name: "NOT allow executing mutations on GET requests", method: http.MethodGet, accept: gr, check: wantStatusBetween(400, 499)},
		{id: "9ABE", level: auditShould, name: "respond with 4xx status code if content-type is not supplied on POST requests", method: http.MethodPost, body: typename, check: wantStatusBetween(400, 499)},
		post("03D4", auditMust, "accept application/json POST requests", "", typename, wantStatus(200)),
		{id: "A5BF", level: auditMay, name: "use 400 status code when request body is missing on POST", method: http.MethodPost, ctype: js, check: wantStatus(400)},
		post("423L", auditMay, "use 400 status code on missing {query} parameter", gr, `{"notquery":"{ __typename }"}`, wantStatus(400)),
		post("34A2", auditShould, "allow string {query} parameter when accepting application/graphql-response+json", gr, typename, wantStatus(200)),
		post("13EE", auditMust, "allow string {query} parameter when accepting application/json", js, typename, wantMember(200, "errors", false)),
		post("8161", auditShould, "allow string {operationName} parameter when accepting application/graphql-response+json", gr, `{"operationName":"Query","query":"query Query { __typename }"}`, wantStatus(200)),
		post("B8B3", auditMust, "allow string {operationName} parameter when accepting application/json", js, `{"operationName":"Query","query":"query Query { __typename }"}`, wantMember(200, "errors", false)),
		post("2EA1", auditShould, "allow map {variables} parameter when accepting application/graphql-response+json", gr, typeVars, wantStatus(200)),
		post("28B9", auditMust, "allow map {variables} parameter when accepting application/json", js, typeVars, wantMember(200, "errors", false)),
		post("428F", auditShould, "allow map {extensions} parameter when accepting application/graphql-response+json", gr, `{"query":"{ __typename }","extensions":{"some":"value"}}`, wantStatus(200)),
		post("1B7A", auditMust, "allow map {extensions} parameter when accepting application/json", js, `{"query":"{ __typename }","extensions":{"some":"value"}}`, wantMember(200, "errors", false)),
		post("B6DC", auditMay, "use 2xx, 4xx, or 5xx status codes on JSON parsing failure when accepting application/json", js, notJSON, wantStatusBetween(200, 599)),
		post("BCF8", auditShould, "use 400 status code on JSON parsing failure when accepting application/json", js, notJSON, wantStatus(400)),
		post("B7N8", auditShould, "use 400 status code on JSON parsing failure when accepting application/graphql-response+json", gr, notJSON, wantStatus(400)),
		post("8764", auditMay, "use 4xx or 5xx status codes if parameters are invalid", "", `{"qeury":"{ __typename }"}`, wantStatusBetween(400, 599)),
		post("3E3A", auditMay, "use 400 status code if parameters are invalid", "", `{"qeury":"{ __typename }"}`, wantStatus(400)),
		post("572B", auditShould, "use 200 status code on document parsing failure when accepting application/json", js, `{"query":"{"}`, wantStatus(200)),
		post("FDE2", auditShould, "use 200 status code on document validation failure when accepting application/json", js, badQuery, wantStatus(200)),
		post("7B9B", auditShould, "use a status code of 200 on variable coercion failure when accepting application/json", js, coerce, wantStatus(200)),
		post("865D", auditShould, "use 4xx or 5xx status codes on document parsing failure when accepting application/graphql-response+json", gr, `{"query":"{"}`, wantStatusBetween(400, 599)),
		post("556A", auditShould, "use 400 status code on document parsing failure when accepting application/graphql-response+json", gr, `{"query":"{"}`, wantStatus(400)),
		post("D586", auditShould, "not contain the data entry on document parsing failure when accepting application/graphql-response+json", gr, `{"query":"{"}`, wantMember(0, "data", false)),
		post("51FE", auditShould, "use 4xx or 5xx status codes on document validation failure when accepting application/graphql-response+json", gr, badQuery, wantStatusBetween(400, 599)),
		post("74FF", auditShould, "use 400 status code on document validation failure when accepting application/graphql-response+json", gr, badQuery, wantStatus(400)),
		post("5E5B", auditShould, "not contain the data entry on document validation failure when accepting application/graphql-response+json", gr, badQuery, wantMember(0, "data", false)),
		post("86EE", auditShould, "use a status code of 400 on variable coercion failure when accepting application/graphql-response+json", gr, coerce, wantStatus(400)),
	}
	for i, invalid := range []string{`{"obj":"ect"}`, `0`, `false`, `["array"]`} {
		a = append(a,
			post(fmt.Sprintf("LKJ%d", i), auditMay, "use 400 status code on invalid {query} parameter", "", `{"query":`+invalid+`}`, wantStatus(400)),
			post(fmt.Sprintf("6C0%d", i), auditMay, "use 400 status code on invalid {operationName} parameter", "", `{"operationName":`+invalid+`,"query":"{ __typename }"}`, wantStatus(400)))
	}
	for i, invalid := range []string{`"string"`, `0`, `false`, `["array"]`} {
		a = append(a,
			post(fmt.Sprintf("476%d", i), auditMay, "use 400 status code on invalid {variables} parameter", "", `{"query":"{ __typename }","variables":`+invalid+`}`, wantStatus(400)),
			post(fmt.Sprintf("58B%d", i), auditMay, "use 400 status code on invalid {extensions} parameter", "", `{"query":"{ __typename }","extensions":`+invalid+`}`, wantStatus(400)))
	}
	for i, param := range []string{"variables", "operationName", "extensions"} {
		body := `{"query":"{ __typename }","` + param + `":null}`
		a = append(a,
			post(fmt.Sprintf("94B%d", i), auditShould, "allow null {"+param+"} parameter when accepting application/graphql-response+json", gr, body, wantMember(200, "errors", false)),
			post(fmt.Sprintf("022%d", i), auditMust, "allow null {"+param+"} parameter when accepting application/json", js, body, wantMember(200, "errors", false)))
	}
	return a
}

// TestGraphQLOverHTTPAudit runs the audits against a real recordsd on a real PostgreSQL.
func TestGraphQLOverHTTPAudit(t *testing.T) {
	e := newEnv(t, envOpts{})
	var short []string
	for _, a := range graphqlHTTPAudits() {
		req, err := http.NewRequest(a.method, e.srv.URL+"/graphql", strings.NewReader(a.body))
		if err != nil {
			t.Fatal(err)
		}
		if a.method == http.MethodGet {
			req.URL.RawQuery = "query=%7B+__typename+%7D"
		}
		req.Header.Set("X-Civic-Identity", token(t))
		if a.accept != "" {
			req.Header.Set("Accept", a.accept)
		}
		if a.ctype != "" {
			req.Header.Set("Content-Type", a.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := a.check(auditAnswer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}); err != nil {
			line := fmt.Sprintf("%s %s %s: %v", a.id, a.level, a.name, err)
			if a.level == auditMay {
				t.Logf("MAY not done (allowed): %s", line)
				continue
			}
			short = append(short, line)
		}
	}
	for _, s := range short {
		t.Errorf("audit short: %s", s)
	}
}
