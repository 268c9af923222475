package gqlguard

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// graphql_guard in front of "any GraphQL backend" (a lending library, not
// the records service), as Caddy runs it: families across query, mutation
// and subscription root fields, operation types, GET, the GraphQL over HTTP
// response media type, APQ in memory and in Redis, trusted documents and
// streamed responses (graphql-sse, multipart/mixed).

const (
	borrowMutation = `mutation Borrow { borrowBook(bookId: "b1") { id due } }`
	returnMutation = `mutation Return { returnBook(loanId: "l1") { id returned } }`
	loanEventsSub  = `subscription Events { loanEvents { kind loan { id } } }`
	booksQuery     = `query Books($first: Int) { books(first: $first) { nodes { id title } } }`

	bodyOnlyQueries = `{"data":null,"errors":[{"message":"Only query operations are allowed","locations":[{"line":1,"column":1}],"extensions":{"code":"OPERATION_NOT_ALLOWED"}}]}`
	bodyNoSubs      = `{"data":null,"errors":[{"message":"Subscription operations are not allowed","locations":[{"line":1,"column":1}],"extensions":{"code":"OPERATION_NOT_ALLOWED"}}]}`
	bodySubOverPOST = `{"data":null,"errors":[{"message":"Subscriptions need a WebSocket (graphql-transport-ws) or an event stream (Accept: text/event-stream)","locations":[{"line":1,"column":1}],"extensions":{"code":"OPERATION_NOT_ALLOWED"}}]}`
	bodyNotEntitled = `{"error":"Tier not entitled to this endpoint family"}`
	bodyPQNotFound  = `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`
	bodyPQMismatch  = `{"errors":[{"message":"provided sha does not match query","extensions":{"code":"PERSISTED_QUERY_HASH_MISMATCH"}}]}`
	bodyPQVersion   = `{"errors":[{"message":"Unsupported persisted query version","extensions":{"code":"PERSISTED_QUERY_VERSION_NOT_SUPPORTED"}}]}`
	bodyUntrusted   = `{"data":null,"errors":[{"message":"Only trusted documents are allowed","extensions":{"code":"TRUSTED_DOCUMENT_REQUIRED"}}]}`
)

// libraryRoutes: /lib (every operation type, entitlements from X-Families),
// /lib/queries (operations query), /lib/nosubs (operations query mutation).
func libraryRoutes(t *testing.T) string {
	schema := testdataPath(t, "library.graphqls")
	route := func(path, extra string) string {
		return fmt.Sprintf(`
	route %s {
		graphql_guard {
			schema %s
			entitlements {http.request.header.X-Families}%s%s
		}
		%s
	}`, path, schema, libraryFamilies, extra, libraryEcho)
	}
	return route("/lib", "") + route("/lib/queries", "\n\t\t\toperations query") + route("/lib/nosubs", "\n\t\t\toperations query mutation")
}

func families(list string) map[string]string { return map[string]string{"X-Families": list} }

func TestAnyBackendFamiliesAndOperations(t *testing.T) {
	s := startCaddy(t, libraryRoutes(t))
	both, catalog := families("catalog,loans"), families("catalog")
	sse := map[string]string{"X-Families": "catalog,loans", "Accept": "text/event-stream"}

	// A fragment on Book shared by a query and a mutation: selecting the
	// mutation is still attributed to Mutation.borrowBook (loans).
	shared := `query Q { books { nodes { ...B } } } mutation M { borrowBook(bookId: "b1") { book { ...B } } } fragment B on Book { title }`
	// Root fields reached only through a fragment on Mutation.
	viaFragment := `mutation M { ...F } fragment F on Mutation { borrowBook(bookId: "b1") { id } }`
	hiddenReturn := `mutation M { ...F } fragment F on Mutation { borrowBook(bookId: "b1") { id } r: returnBook(loanId: "l1") { id } }`

	for _, tc := range []struct {
		name    string
		path    string
		headers map[string]string
		body    string
		status  int
		want    string
	}{
		{"mutation entitled", "/lib", both, q(borrowMutation), 200,
			echoed("mutation", "borrowBook", "loans", "", q(borrowMutation))},
		{"mutation not entitled", "/lib", catalog, q(borrowMutation), 403, bodyNotEntitled},
		{"mutation with no families owned", "/lib", families(""), q(borrowMutation), 403, bodyNotEntitled},
		{"mutation field in no family", "/lib", both, q(returnMutation), 403, bodyNotEntitled},
		{"query entitled", "/lib", catalog, q(booksQuery, `"variables":{"first":2}`), 200,
			echoed("query", "books", "catalog", "", q(booksQuery, `"variables":{"first":2}`))},
		{"query across two families", "/lib", both, q(`{ books { endCursor } loans(memberId: "m1") { id } }`), 200,
			echoed("query", "books,loans", "catalog,loans", "", q(`{ books { endCursor } loans(memberId: "m1") { id } }`))},
		{"query across two families, one owned", "/lib", catalog, q(`{ books { endCursor } loans(memberId: "m1") { id } }`), 403, bodyNotEntitled},
		{"shared fragment, mutation selected, not entitled", "/lib", catalog, q(shared, `"operationName":"M"`), 403, bodyNotEntitled},
		{"shared fragment, query selected", "/lib", catalog, q(shared, `"operationName":"Q"`), 200,
			echoed("query", "books", "catalog", "", q(shared, `"operationName":"Q"`))},
		{"shared fragment, mutation selected, entitled", "/lib", both, q(shared, `"operationName":"M"`), 200,
			echoed("mutation", "borrowBook", "loans", "", q(shared, `"operationName":"M"`))},
		{"mutation root field in a fragment, not entitled", "/lib", catalog, q(viaFragment), 403, bodyNotEntitled},
		{"mutation root field in a fragment, entitled", "/lib", both, q(viaFragment), 200,
			echoed("mutation", "borrowBook", "loans", "", q(viaFragment))},
		{"returnBook aliased in a fragment", "/lib", both, q(hiddenReturn), 403, bodyNotEntitled},
		{"operations query refuses a mutation", "/lib/queries", both, q(borrowMutation), 200, bodyOnlyQueries},
		{"operations query refuses a subscription", "/lib/queries", sse, q(loanEventsSub), 200, bodyOnlyQueries},
		{"operations query passes a query", "/lib/queries", catalog, q(`{ book(id: "b1") { title } }`), 200,
			echoed("query", "book", "catalog", "", q(`{ book(id: "b1") { title } }`))},
		{"operations query mutation passes a mutation", "/lib/nosubs", both, q(borrowMutation), 200,
			echoed("mutation", "borrowBook", "loans", "", q(borrowMutation))},
		{"operations query mutation refuses a subscription", "/lib/nosubs", sse, q(loanEventsSub), 200, bodyNoSubs},
		{"subscription over a plain POST", "/lib", both, q(loanEventsSub), 200, bodySubOverPOST},
		{"subscription over an event stream, not entitled", "/lib", map[string]string{"X-Families": "catalog", "Accept": "text/event-stream"}, q(loanEventsSub), 403, bodyNotEntitled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, call{path: tc.path, headers: tc.headers, body: tc.body})
			expect(t, tc.name, resp, body, tc.status, tc.want)
		})
	}
}

func TestAnyBackendGET(t *testing.T) {
	schema := testdataPath(t, "library.graphqls")
	s := startCaddy(t, fmt.Sprintf(`
	route /get {
		graphql_guard {
			schema %[1]s
			methods GET POST
		}
		%[2]s
	}
	route /post {
		graphql_guard {
			schema %[1]s
		}
		%[2]s
	}`, schema, libraryEcho))

	get := func(path string, v url.Values) (*http.Response, string, string) {
		enc := v.Encode()
		resp, body := s.do(t, call{method: http.MethodGet, path: path + "?" + enc, ctype: "-"})
		return resp, body, enc
	}
	byID := `query One($id: ID!) { book(id: $id) { title } }`

	t.Run("query with variables and extensions in the URL", func(t *testing.T) {
		resp, body, enc := get("/get", url.Values{"query": {byID}, "variables": {`{"id":"b1"}`}, "extensions": {`{"tracing":true}`}, "operationName": {"One"}})
		expect(t, "GET", resp, body, 200, echoed("query", "book", "", enc, ""))
	})
	t.Run("variables checked against the document", func(t *testing.T) {
		resp, body, _ := get("/get", url.Values{"query": {byID}, "variables": {`{"id":{"x":1}}`}})
		if resp.StatusCode != 400 || !strings.Contains(body, `Variable \"$id\" is invalid`) {
			t.Fatalf("got %d %s", resp.StatusCode, body)
		}
	})
	t.Run("POST still served", func(t *testing.T) {
		resp, body := s.do(t, call{path: "/get", body: q(byID, `"variables":{"id":"b1"}`)})
		expect(t, "POST", resp, body, 200, echoed("query", "book", "", "", q(byID, `"variables":{"id":"b1"}`)))
	})
	t.Run("GET without methods GET", func(t *testing.T) {
		resp, body, _ := get("/post", url.Values{"query": {`{ books { endCursor } }`}})
		expect(t, "GET on a POST-only route", resp, body, 405, `{"errors":[{"message":"Method not allowed: use POST"}]}`)
		if got := resp.Header.Get("Allow"); got != "POST" {
			t.Fatalf("Allow %q, want POST", got)
		}
	})
	t.Run("PUT with methods GET POST", func(t *testing.T) {
		resp, body := s.do(t, call{method: http.MethodPut, path: "/get", body: q(`{ books { endCursor } }`)})
		expect(t, "PUT", resp, body, 405, `{"errors":[{"message":"Method not allowed: use GET or POST"}]}`)
		if got := resp.Header.Get("Allow"); got != "GET, POST" {
			t.Fatalf("Allow %q, want GET, POST", got)
		}
	})
	t.Run("mutation over GET", func(t *testing.T) {
		resp, body, _ := get("/get", url.Values{"query": {borrowMutation}})
		expect(t, "mutation over GET", resp, body, 405, `{"errors":[{"message":"Mutations are not allowed over GET; use POST"}]}`)
		if got := resp.Header.Get("Allow"); got != "POST" {
			t.Fatalf("Allow %q, want POST", got)
		}
	})
	t.Run("mutation over POST on the same route", func(t *testing.T) {
		resp, body := s.do(t, call{path: "/get", body: q(borrowMutation)})
		expect(t, "mutation over POST", resp, body, 200, echoed("mutation", "borrowBook", "", "", q(borrowMutation)))
	})
	t.Run("subscription over a plain GET", func(t *testing.T) {
		resp, body, _ := get("/get", url.Values{"query": {loanEventsSub}})
		expect(t, "subscription over GET", resp, body, 200, bodySubOverPOST)
	})
	t.Run("subscription over a plain POST", func(t *testing.T) {
		resp, body := s.do(t, call{path: "/get", body: q(loanEventsSub)})
		expect(t, "subscription over POST", resp, body, 200, bodySubOverPOST)
	})
	t.Run("malformed variables", func(t *testing.T) {
		resp, body, _ := get("/get", url.Values{"query": {byID}, "variables": {`{"id":`}})
		expect(t, "malformed variables", resp, body, 400, `{"errors":[{"message":"\"variables\" must be a JSON object or null"}]}`)
	})
	t.Run("variables not an object", func(t *testing.T) {
		resp, body, _ := get("/get", url.Values{"query": {byID}, "variables": {`["b1"]`}})
		expect(t, "variables array", resp, body, 400, `{"errors":[{"message":"\"variables\" must be a JSON object or null"}]}`)
	})
	t.Run("malformed extensions", func(t *testing.T) {
		resp, body, _ := get("/get", url.Values{"query": {byID}, "extensions": {`{"a":`}})
		expect(t, "malformed extensions", resp, body, 400, `{"errors":[{"message":"\"extensions\" must be a JSON object or null"}]}`)
	})
	t.Run("no query", func(t *testing.T) {
		resp, body, _ := get("/get", url.Values{"operationName": {"One"}})
		expect(t, "no query", resp, body, 400, `{"errors":[{"message":"Request URL query must contain a \"query\" parameter"}]}`)
	})
}

func TestAnyBackendGraphQLResponse(t *testing.T) {
	s := startCaddy(t, libraryRoutes(t))
	const gr = "application/graphql-response+json"
	catalog := func(accept string) map[string]string {
		h := families("catalog")
		if accept != "" {
			h["Accept"] = accept
		}
		return h
	}
	cases := []struct {
		name       string
		path, body string
		jsonStatus int
		jsonBody   string // exact application/json body (today's)
		grStatus   int
		grBody     string // exact graphql-response+json body
	}{
		{"parse error", "/lib", q("{ books {"), 200,
			`{"data":null,"errors":[{"message":"Expected Name, found <EOF>","locations":[{"line":1,"column":10}],"extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`,
			400, `{"errors":[{"message":"Expected Name, found <EOF>","locations":[{"line":1,"column":10}],"extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`},
		{"validation error", "/lib", q("{ books { nodez } }"), 200,
			`{"data":null,"errors":[{"message":"Cannot query field \"nodez\" on type \"BookConnection\". Did you mean \"nodes\"?","locations":[{"line":1,"column":11}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`,
			400, `{"errors":[{"message":"Cannot query field \"nodez\" on type \"BookConnection\". Did you mean \"nodes\"?","locations":[{"line":1,"column":11}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{"not entitled", "/lib", q(borrowMutation), 403, bodyNotEntitled,
			403, `{"errors":[{"message":"Tier not entitled to this endpoint family","extensions":{"code":"NOT_ENTITLED","family":"loans"}}]}`},
		{"operation type not allowed", "/lib/queries", q(borrowMutation), 200, bodyOnlyQueries,
			400, `{"errors":[{"message":"Only query operations are allowed","locations":[{"line":1,"column":1}],"extensions":{"code":"OPERATION_NOT_ALLOWED"}}]}`},
		{"malformed body", "/lib", `{"query":`, 400, `{"errors":[{"message":"Request body is not valid JSON: unexpected end of input"}]}`,
			400, `{"errors":[{"message":"Request body is not valid JSON: unexpected end of input","extensions":{"code":"BAD_REQUEST"}}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, accept := range []string{"", "application/json", gr + ";q=0, application/json"} {
				resp, body := s.do(t, call{path: tc.path, headers: catalog(accept), body: tc.body})
				expect(t, "Accept "+accept, resp, body, tc.jsonStatus, tc.jsonBody)
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("Accept %q: Content-Type %q, want application/json", accept, ct)
				}
			}
			for _, accept := range []string{gr, gr + ", application/json;q=0.9", "application/json;q=0.9, " + gr} {
				resp, body := s.do(t, call{path: tc.path, headers: catalog(accept), body: tc.body})
				expect(t, "Accept "+accept, resp, body, tc.grStatus, tc.grBody)
				if ct := resp.Header.Get("Content-Type"); ct != gr {
					t.Fatalf("Accept %q: Content-Type %q, want %s", accept, ct, gr)
				}
				if strings.Contains(body, `"data"`) {
					t.Fatalf("Accept %q: a request error has a data member: %s", accept, body)
				}
				if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
					t.Fatalf("Accept %q: Content-Length %q for %d bytes", accept, cl, len(body))
				}
			}
		})
	}
	t.Run("admitted request reaches the backend unchanged", func(t *testing.T) {
		resp, body := s.do(t, call{path: "/lib", headers: catalog(gr + ", application/json;q=0.9"), body: q(booksQuery)})
		expect(t, "admitted", resp, body, 200, echoed("query", "books", "catalog", "", q(booksQuery)))
	})
}

// streamThrough starts Caddy with the guard in front of a reverse_proxy to
// up and POSTs body with accept.
func streamThrough(t *testing.T, addr, accept, body string) (*http.Response, func()) {
	t.Helper()
	schema := testdataPath(t, "library.graphqls")
	s := startCaddy(t, fmt.Sprintf(`
	route /stream {
		graphql_guard {
			schema %s
			entitlements {http.request.header.X-Families}%s
		}
		reverse_proxy %s
	}`, schema, libraryFamilies, addr))
	req, err := http.NewRequest(http.MethodPost, s.base+"/stream", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("X-Families", "catalog,loans")
	resp, err := s.tester.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, func() { resp.Body.Close() }
}

func TestAnyBackendEventStream(t *testing.T) {
	const ev = "event: next\ndata: {\"data\":{\"loanEvents\":{\"kind\":\"%s\",\"loan\":{\"id\":\"l%d\"}}}}\n\n"
	first := fmt.Sprintf(ev, "BORROWED", 1)
	rest := fmt.Sprintf(ev, "RETURNED", 2) + fmt.Sprintf(ev, "BORROWED", 3) + "event: complete\ndata:\n\n"
	up, addr := startStreamUpstream(t, "text/event-stream", first, rest)
	body := q(loanEventsSub)
	resp, closeBody := streamThrough(t, addr, "text/event-stream", body)
	defer closeBody()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(resp.Body)
	got := readUntil(t, r, first, 10*time.Second)
	select {
	case <-up.done:
		t.Fatal("the upstream finished before the client read the first event")
	default:
	}
	close(up.release) // the upstream writes the rest only now
	got += readUntil(t, r, "event: complete\ndata:\n\n", 10*time.Second)
	if got != first+rest {
		t.Fatalf("stream %q, want %q", got, first+rest)
	}
	<-up.done
	gotBody, gotAccept, gaveUp := up.seen()
	if gaveUp {
		t.Fatal("the upstream waited out its deadline: the first event was held back")
	}
	if gotBody != body || gotAccept != "text/event-stream" {
		t.Fatalf("upstream got %q with Accept %q", gotBody, gotAccept)
	}
}

func TestAnyBackendMultipartDefer(t *testing.T) {
	const part = "\r\n---\r\nContent-Type: application/json; charset=utf-8\r\n\r\n%s"
	first := fmt.Sprintf(part, `{"data":{"book":{"id":"b1"}},"hasNext":true}`)
	rest := fmt.Sprintf(part, `{"incremental":[{"data":{"title":"Dune"},"path":["book"]}],"hasNext":true}`) +
		fmt.Sprintf(part, `{"incremental":[{"data":{"author":"Herbert"},"path":["book"]}],"hasNext":false}`) + "\r\n-----\r\n"
	up, addr := startStreamUpstream(t, `multipart/mixed; boundary="-"`, first, rest)
	body := q(`query Deferred { book(id: "b1") { id ... @defer { title } ... @defer { author } } }`)
	resp, closeBody := streamThrough(t, addr, `multipart/mixed; deferSpec=20220824, application/json`, body)
	defer closeBody()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != `multipart/mixed; boundary="-"` {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(resp.Body)
	got := readUntil(t, r, `"hasNext":true}`, 10*time.Second)
	select {
	case <-up.done:
		t.Fatal("the upstream finished before the client read the first part")
	default:
	}
	close(up.release)
	got += readUntil(t, r, "\r\n-----\r\n", 10*time.Second)
	if got != first+rest {
		t.Fatalf("stream %q, want %q", got, first+rest)
	}
	<-up.done
	gotBody, _, gaveUp := up.seen()
	if gaveUp {
		t.Fatal("the upstream waited out its deadline: the first part was held back")
	}
	if gotBody != body {
		t.Fatalf("upstream got %q", gotBody)
	}
}
