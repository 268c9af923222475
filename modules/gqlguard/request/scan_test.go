package request

import (
	"reflect"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/rawjson"
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
		if query, err = rawjson.Unquote(rq.queryQuoted); err != nil {
			t.Fatal(err)
		}
	}
	if query != req.Query {
		t.Fatalf("%q: query %q, decodeRequest %q", body, query, req.Query)
	}
	op := string(rq.op)
	if rq.opEsc {
		if op, err = rawjson.Unquote(rq.opQuoted); err != nil {
			t.Fatal(err)
		}
	}
	if op != req.OperationName {
		t.Fatalf("%q: operationName %q, decodeRequest %q", body, op, req.OperationName)
	}
	vars, err := rawjson.DecodeObject(rq.vars)
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
