package gqlguard

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// scanBodies are request bodies the fast path must treat exactly like
// decodeRequest: accepted with the same values, or left to decodeRequest.
var scanBodies = []string{
	`{"query":"{ bills { nextCursor } }"}`,
	` { "query" : "{ a }" , "variables" : { "n" : 1 , "s" : "x" } , "operationName" : "Q" } `,
	`{"query":"q","variables":null,"operationName":null,"extensions":null}`,
	`{"query":"q","extensions":{"persistedQuery":{"version":1,"sha256Hash":"ab"}}}`,
	`{"query":"line\nnext \"quoted\" \u00e9 \\ \/","operationName":"A\u0042"}`,
	`{"variables":{"in":{"limit":10,"list":[1,2.5,-3e2,true,false,null,"a\"b",{"k":[]}]}},"query":"q"}`,
	`{"query":"q","variables":{"s":"}{]["}}`,
	`{"query":"q","variables":{"k\u0041":"v"}}`,
	`{"query":""}`,
	// left to decodeRequest (refused or unusual)
	`{"query":"q","query":"r"}`,
	`{"qu\u0065ry":"q"}`,
	`{"query":1}`,
	`{"query":"q","variables":[]}`,
	`{"query":"q","variables":"x"}`,
	`{"query":"q","operationName":1}`,
	`{"query":"q","extensions":1}`,
	`{"query":"q","other":1}`,
	`{"variables":{}}`,
	`{}`,
	`[]`,
	``,
	`{"query":"q"} x`,
	`{"query":"q"}{"query":"r"}`,
	`{"query":"q",}`,
	"{\"query\":\"\xff\"}",
	`{"query":"q\u0000"}`,
}

func TestScanRequestAgreesWithDecodeRequest(t *testing.T) {
	accepted := 0
	for _, body := range scanBodies {
		if checkScanAgrees(t, []byte(body)) {
			accepted++
		}
	}
	if accepted < 9 {
		t.Fatalf("the fast path accepted %d of the first 9 bodies", accepted)
	}
}

func FuzzScanRequest(f *testing.F) {
	for _, b := range scanBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkScanAgrees(t, body) })
}

// checkScanAgrees fails when scanRequest accepts a body that decodeRequest
// refuses or reads differently; it reports whether the fast path took it.
func checkScanAgrees(t *testing.T, body []byte) bool {
	t.Helper()
	rq, ok := scanRequest(body)
	if !ok {
		return false
	}
	req, err := decodeRequest(body)
	if err != nil {
		t.Fatalf("%q: fast path accepted, decodeRequest refused: %v", body, err)
	}
	query := string(rq.query)
	if rq.queryEsc {
		if query, err = unquote(rq.queryQuoted); err != nil {
			t.Fatal(err)
		}
	}
	if query != req.Query {
		t.Fatalf("%q: query %q, decodeRequest %q", body, query, req.Query)
	}
	op := string(rq.op)
	if rq.opEsc {
		if op, err = unquote(rq.opQuoted); err != nil {
			t.Fatal(err)
		}
	}
	if op != req.OperationName {
		t.Fatalf("%q: operationName %q, decodeRequest %q", body, op, req.OperationName)
	}
	vars, err := decodeVariables(rq.vars)
	if err != nil {
		t.Fatalf("%q: variables: %v", body, err)
	}
	if !reflect.DeepEqual(vars, req.Variables) {
		t.Fatalf("%q: variables %#v, decodeRequest %#v", body, vars, req.Variables)
	}
	if !rq.varsEsc && strings.Contains(string(rq.vars), `\`) {
		t.Fatalf("%q: a backslash in the variables was not flagged", body)
	}
	return true
}

// On the fast path a token hidden by JSON escapes in the query, the
// operation name or the variables is still found, and the memoised
// coercion still refuses bad variables and prices new ones.
func TestFastPathChecks(t *testing.T) {
	g := provisioned(t, &Guard{})
	const token = "cg_test_abcdefghijklmnopqrstuvwxyz012345"
	esc := `\u0063` + token[1:]
	send := func(body string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		if err := g.ServeHTTP(w, r, &recordNext{}); err != nil {
			t.Fatal(err)
		}
		return w.Code, w.Body.String()
	}
	const refused = `{"errors":[{"message":"Request must not contain the bearer token"}]}`
	for name, body := range map[string]string{
		"query":         `{"query":"{ bills(input: {q: \"` + esc + `\"}) { nextCursor } }"}`,
		"operationName": `{"query":"query Q { bills { nextCursor } }","operationName":"` + esc + `"}`,
		"variables":     `{"query":"query($q: String) { bills(input: {q: $q}) { nextCursor } }","variables":{"q":"` + esc + `"}}`,
		"variable name": `{"query":"{ bills { nextCursor } }","variables":{"` + esc + `":1}}`,
	} {
		if _, ok := scanRequest([]byte(body)); !ok {
			t.Fatalf("%s: not on the fast path", name)
		}
		if code, got := send(body); code != http.StatusBadRequest || got != refused {
			t.Errorf("%s: %d %s", name, code, got)
		}
	}
	q := `{"query":"query Q($n: Int) { bills(input: {limit: $n}) { items { id } nextCursor } }","operationName":"\u0051","variables":`
	for range 2 { // the second time from the memo
		if code, body := send(q + `{"n":5}}`); code != http.StatusNoContent {
			t.Fatalf("valid: %d %s", code, body)
		}
		if code, body := send(q + `{"n":"x"}}`); code != 400 || !strings.Contains(body, `Variable \"$n\" is invalid`) {
			t.Fatalf("bad variable: %d %s", code, body)
		}
		if code, body := send(q + `{"n":100000}}`); code != 200 || !strings.Contains(body, "QUERY_TOO_COMPLEX") {
			t.Fatalf("cost from variables: %d %s", code, body)
		}
	}
	if code, body := send(`{"query":"query Q { bills { nextCursor } }","operationName":"R"}`); code != 400 || !strings.Contains(body, `Unknown operation named \"R\"`) {
		t.Fatalf("unknown operation: %d %s", code, body)
	}
}
