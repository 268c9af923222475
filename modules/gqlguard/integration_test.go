package gqlguard

import (
	"strings"
	"testing"
)

const billsQuery = `query Bills($n: Int) { bills(input: {congress: 118, limit: $n}) { items { id title sponsors { name } } nextCursor } }`

func TestGuardOutcomes(t *testing.T) {
	s := startCaddy(t, guardRoutes(testSchemaPath(t)))

	bigBody := q("{ bills { nextCursor } }", `"variables":{"pad":"`+strings.Repeat("x", 2000)+`"}`)
	const token = "cg_test_0123456789abcdefghijABCDEFGHIJ0123456789ab"
	auth := map[string]string{"Authorization": "Bearer " + token}

	tests := []struct {
		name   string
		call   call
		status int
		body   string
		header map[string]string
	}{
		// §3.6 request errors
		{"GET refused", call{method: "GET", path: "/g"}, 405,
			`{"errors":[{"message":"Method not allowed: use POST"}]}`, map[string]string{"Allow": "POST"}},
		{"PUT refused", call{method: "PUT", path: "/g", body: q("{ bills { nextCursor } }")}, 405,
			`{"errors":[{"message":"Method not allowed: use POST"}]}`, map[string]string{"Allow": "POST"}},
		{"text/plain refused", call{path: "/g", ctype: "text/plain", body: q("{ bills { nextCursor } }")}, 415,
			`{"errors":[{"message":"Unsupported content type: use application/json"}]}`, nil},
		{"missing content type", call{path: "/g", ctype: "-", body: q("{ bills { nextCursor } }")}, 415,
			`{"errors":[{"message":"Unsupported content type: use application/json"}]}`, nil},
		{"latin1 charset refused", call{path: "/g", ctype: "application/json; charset=latin1", body: q("{ bills { nextCursor } }")}, 415,
			`{"errors":[{"message":"Unsupported content type: use application/json"}]}`, nil},
		{"body too large", call{path: "/small", body: bigBody}, 413,
			`{"errors":[{"message":"Request body too large"}]}`, nil},
		{"chunked body too large", call{path: "/small", body: bigBody, chunked: true}, 413,
			`{"errors":[{"message":"Request body too large"}]}`, nil},
		{"chunked body within the limit", call{path: "/small", body: q("{ bills { nextCursor } }"), chunked: true}, 200,
			forwarded("", "", 1, q("{ bills { nextCursor } }")), nil},
		{"empty body", call{path: "/g", body: ""}, 400,
			`{"errors":[{"message":"Request body is empty"}]}`, nil},
		{"bad JSON", call{path: "/g", body: `{"query": "{ bills { nextCursor } }"`}, 400,
			`{"errors":[{"message":"Request body is not valid JSON: unexpected end of input"}]}`, nil},
		{"not an object", call{path: "/g", body: `["{ bills { nextCursor } }"]`}, 400,
			`{"errors":[{"message":"Request body must be a JSON object"}]}`, nil},
		{"duplicate query key", call{path: "/g", body: `{"query":"{ bills { nextCursor } }","query":"{ members { nextCursor } }"}`}, 400,
			`{"errors":[{"message":"Request body has duplicate key \"query\""}]}`, nil},
		{"unknown key", call{path: "/g", body: `{"query":"{ bills { nextCursor } }","qeury":"x"}`}, 400,
			`{"errors":[{"message":"Request body has unknown key \"qeury\""}]}`, nil},
		{"trailing data", call{path: "/g", body: `{"query":"{ bills { nextCursor } }"} {}`}, 400,
			`{"errors":[{"message":"Request body must contain a single JSON object"}]}`, nil},
		{"invalid UTF-8", call{path: "/g", body: "{\"query\":\"{ bills(input: {q: \\\"\xff\\\"}) { nextCursor } }\"}"}, 400,
			`{"errors":[{"message":"Request body is not valid UTF-8"}]}`, nil},
		{"query missing", call{path: "/g", body: `{"variables":{}}`}, 400,
			`{"errors":[{"message":"Request body must contain a \"query\" string"}]}`, nil},
		{"query empty", call{path: "/g", body: `{"query":""}`}, 400,
			`{"errors":[{"message":"Request body must contain a non-empty \"query\" string"}]}`, nil},
		{"query blank", call{path: "/g", body: `{"query":" \n\t, # only a comment\n"}`}, 400,
			`{"errors":[{"message":"Request body must contain a non-empty \"query\" string"}]}`, nil},
		{"query blank with operationName", call{path: "/g", body: `{"query":"  ","operationName":"A"}`}, 400,
			`{"errors":[{"message":"Request body must contain a non-empty \"query\" string"}]}`, nil},
		{"query not a string", call{path: "/g", body: `{"query":42}`}, 400,
			`{"errors":[{"message":"\"query\" must be a string"}]}`, nil},
		{"query null", call{path: "/g", body: `{"query":null}`}, 400,
			`{"errors":[{"message":"\"query\" must be a string"}]}`, nil},
		{"variables an array", call{path: "/g", body: q("{ bills { nextCursor } }", `"variables":[1]`)}, 400,
			`{"errors":[{"message":"\"variables\" must be an object or null"}]}`, nil},
		{"variables a string", call{path: "/g", body: q("{ bills { nextCursor } }", `"variables":"{}"`)}, 400,
			`{"errors":[{"message":"\"variables\" must be an object or null"}]}`, nil},
		{"operationName a number", call{path: "/g", body: q("{ bills { nextCursor } }", `"operationName":1`)}, 400,
			`{"errors":[{"message":"\"operationName\" must be a string or null"}]}`, nil},
		{"operationName names no operation", call{path: "/g", body: q("query A { bills { nextCursor } }", `"operationName":"B"`)}, 400,
			`{"errors":[{"message":"Unknown operation named \"B\""}]}`, nil},
		{"several operations without operationName", call{path: "/g", body: q("query A { bills { nextCursor } } query B { members { nextCursor } }")}, 400,
			`{"errors":[{"message":"Must provide operationName when the document contains several operations"}]}`, nil},
		{"variable of the wrong type", call{path: "/g", body: q(billsQuery, `"variables":{"n":"ten"}`)}, 400,
			`{"errors":[{"message":"Variable \"$n\" is invalid at variable.n: cannot use string as Int"}]}`, nil},
		{"required variable missing", call{path: "/g", body: q(`query($id: ID!) { bill(id: $id) { title } }`, `"variables":{}`)}, 400,
			`{"errors":[{"message":"Variable \"$id\" is invalid at variable.id: must be defined"}]}`, nil},
		{"input variable member of the wrong type", call{path: "/g", body: q(`query($in: BillsInput) { bills(input: $in) { nextCursor } }`, `"variables":{"in":{"limit":"many"}}`)}, 400,
			`{"errors":[{"message":"Variable \"$in\" is invalid at variable.in.limit: cannot use string as Int"}]}`, nil},
		// GraphQL's Int is 32 bits; gqlparser alone lets any int64 through to the backend.
		{"variable beyond 32 bits", call{path: "/g", body: q(billsQuery, `"variables":{"n":2170000000}`)}, 400,
			`{"errors":[{"message":"Variable \"$n\" is invalid at variable.n: Int cannot represent non 32-bit signed integer value: 2170000000"}]}`, nil},
		{"input variable member beyond 32 bits", call{path: "/g", body: q(`query($in: BillsInput) { bills(input: $in) { nextCursor } }`, `"variables":{"in":{"limit":-4294967296}}`)}, 400,
			`{"errors":[{"message":"Variable \"$in\" is invalid at variable.in.limit: Int cannot represent non 32-bit signed integer value: -4294967296"}]}`, nil},

		// docs/api.md "Authentication": the bearer token never travels in the document
		{"bearer token in the query", call{path: "/g", headers: auth, body: q(`{ bills(input: {q: "` + token + `"}) { nextCursor } }`)}, 400,
			`{"errors":[{"message":"Request must not contain the bearer token"}]}`, nil},
		{"bearer token in variables", call{path: "/g", headers: auth, body: q(billsQuery, `"variables":{"n":1,"x":"`+token+`"}`)}, 400,
			`{"errors":[{"message":"Request must not contain the bearer token"}]}`, nil},
		{"bearer token JSON-escaped", call{path: "/g", headers: auth, body: q("{ bills { nextCursor } }", `"variables":{"x":"\u0063`+token[1:]+`"}`)}, 400,
			`{"errors":[{"message":"Request must not contain the bearer token"}]}`, nil},
		{"bearer token GraphQL-escaped", call{path: "/g", headers: auth, body: q(`{ bills(input: {q: "\u0063` + token[1:] + `"}) { nextCursor } }`)}, 400,
			`{"errors":[{"message":"Request must not contain the bearer token"}]}`, nil},

		// GraphQL errors: HTTP 200
		{"syntax error", call{path: "/g", body: q("{ bills { nextCursor }")}, 200,
			`{"data":null,"errors":[{"message":"Expected Name, found <EOF>","locations":[{"line":1,"column":23}],"extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`, nil},
		{"every validation error reported", call{path: "/g", body: q("{ bills { nextCursr } bil(id: 1) { title } }")}, 200,
			`{"data":null,"errors":[{"message":"Cannot query field \"nextCursr\" on type \"BillsPage\". Did you mean \"nextCursor\"?","locations":[{"line":1,"column":11}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}},{"message":"Cannot query field \"bil\" on type \"Query\". Did you mean \"bill\" or \"bills\"?","locations":[{"line":1,"column":23}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`, nil},
		{"no suggestions with introspection off", call{path: "/closed", body: q("{ bills { nextCursr } bil(id: 1) { title } }")}, 200,
			`{"data":null,"errors":[{"message":"Cannot query field \"nextCursr\" on type \"BillsPage\".","locations":[{"line":1,"column":11}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}},{"message":"Cannot query field \"bil\" on type \"Query\".","locations":[{"line":1,"column":23}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`, nil},
		{"Int literal beyond 32 bits", call{path: "/g", body: q("{ bills(input: {limit: 2170000000}) { nextCursor } }")}, 200,
			`{"data":null,"errors":[{"message":"Int cannot represent non 32-bit signed integer value: 2170000000","locations":[{"line":1,"column":24}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`, nil},
		{"mutation refused", call{path: "/g", body: q("mutation M { noop }")}, 200,
			`{"data":null,"errors":[{"message":"Only query operations are allowed","locations":[{"line":1,"column":1}],"extensions":{"code":"OPERATION_NOT_ALLOWED"}}]}`, nil},
		{"introspection refused when off", call{path: "/closed", body: q("{ __schema { queryType { name } } }")}, 200,
			`{"data":null,"errors":[{"message":"GraphQL introspection is not allowed","locations":[{"line":1,"column":3}],"extensions":{"code":"INTROSPECTION_DISABLED"}}]}`, nil},
		{"introspection disguised by an alias", call{path: "/closed", body: q("{ bills { nextCursor } s: __type(name: \"Bill\") { name } }")}, 200,
			`{"data":null,"errors":[{"message":"GraphQL introspection is not allowed","locations":[{"line":1,"column":24}],"extensions":{"code":"INTROSPECTION_DISABLED"}}]}`, nil},
		{"introspection hidden in a fragment", call{path: "/closed", body: q("{ ...F } fragment F on Query { t: __schema { types { name } } }")}, 200,
			`{"data":null,"errors":[{"message":"GraphQL introspection is not allowed","locations":[{"line":1,"column":32}],"extensions":{"code":"INTROSPECTION_DISABLED"}}]}`, nil},
		{"__typename allowed with introspection off", call{path: "/closed", body: q("{ __typename }")}, 200,
			forwarded("", "", 0, q("{ __typename }")), nil},

		// limits (route /small: depth 4, aliases 2, root fields 2, directives 1, cost 1000, tokens 100, list size 10)
		{"too deep", call{path: "/small", body: q("query D { bill(id: 1) { sponsors { sponsoredBills { latestAction { text } } } } }")}, 200,
			`{"data":null,"errors":[{"message":"Query depth 5 exceeds the maximum of 4","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_DEEP"}}]}`, nil},
		{"depth hidden in nested fragments", call{path: "/small", body: q("{ ...A } fragment A on Query { bill(id: 1) { ...B } } fragment B on Bill { sponsors { ... on Member { ...C } } } fragment C on Member { sponsoredBills { latestAction { text } } }")}, 200,
			`{"data":null,"errors":[{"message":"Query depth 5 exceeds the maximum of 4","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_DEEP"}}]}`, nil},
		{"operation named __schema does not escape depth", call{path: "/small", body: q("query __schema { bill(id: 1) { sponsors { sponsoredBills { latestAction { text } } } } }")}, 200,
			`{"data":null,"errors":[{"message":"Query depth 5 exceeds the maximum of 4","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_DEEP"}}]}`, nil},
		{"fragment named __schema does not escape depth", call{path: "/small", body: q("{ ...__schema } fragment __schema on Query { bill(id: 1) { sponsors { sponsoredBills { latestAction { text } } } } }")}, 200,
			`{"data":null,"errors":[{"message":"Query depth 5 exceeds the maximum of 4","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_DEEP"}}]}`, nil},
		{"__typename alias flood", call{path: "/small", body: q("{ a: __typename b: __typename c: __typename }")}, 200,
			`{"data":null,"errors":[{"message":"Alias count 3 exceeds the maximum of 2","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ALIASES"}},{"message":"Root field count 3 exceeds the maximum of 2","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ROOT_FIELDS"}}]}`, nil},
		{"aliases counted through fragments", call{path: "/small", body: q("{ bills { ...P ...P } } fragment P on BillsPage { a: nextCursor b: nextCursor }")}, 200,
			`{"data":null,"errors":[{"message":"Alias count 4 exceeds the maximum of 2","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ALIASES"}}]}`, nil},
		{"too many directives", call{path: "/small", body: q("query($s: Boolean!) { bills @include(if: $s) { nextCursor @skip(if: $s) } }", `"variables":{"s":true}`)}, 200,
			`{"data":null,"errors":[{"message":"Directive count 2 exceeds the maximum of 1","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_DIRECTIVES"}}]}`, nil},
		{"cost from a literal limit", call{path: "/small", body: q("{ bills(input: {limit: 1000}) { items { id } } }")}, 200,
			`{"data":null,"errors":[{"message":"Query cost 1001 exceeds the maximum of 1000","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_COMPLEX"}}]}`, nil},
		{"cost limit escaped with a variable", call{path: "/small", body: q(billsQuery, `"variables":{"n":1000}`)}, 200,
			`{"data":null,"errors":[{"message":"Query cost 11001 exceeds the maximum of 1000","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_COMPLEX"}}]}`, nil},
		{"cost limit escaped with an input variable", call{path: "/small", body: q(`query($in: BillsInput) { bills(input: $in) { items { id } } }`, `"variables":{"in":{"limit":5000}}`)}, 200,
			`{"data":null,"errors":[{"message":"Query cost 5001 exceeds the maximum of 1000","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_COMPLEX"}}]}`, nil},
		{"too many tokens", call{path: "/small", body: q("{ bills { items {" + strings.Repeat(" id", 100) + " } } }")}, 200,
			`{"data":null,"errors":[{"message":"Document exceeds the maximum of 100 tokens","locations":[{"line":1,"column":304}],"extensions":{"code":"TOO_MANY_TOKENS"}}]}`, nil},
		{"within limits with a small variable limit", call{path: "/small", body: q(billsQuery, `"variables":{"n":4}`)}, 200,
			forwarded("Bills", "", 45, q(billsQuery, `"variables":{"n":4}`)), nil},
		{"measure_only lets violations through", call{path: "/measure", body: q(billsQuery, `"variables":{"n":50}`)}, 200,
			forwarded("Bills", "", 1301, q(billsQuery, `"variables":{"n":50}`)), nil},
		{"measure_only still refuses mutations", call{path: "/measure", body: q("mutation { noop }")}, 200,
			`{"data":null,"errors":[{"message":"Only query operations are allowed","locations":[{"line":1,"column":1}],"extensions":{"code":"OPERATION_NOT_ALLOWED"}}]}`, nil},

		// entitlements
		{"entitled family passes", call{path: "/g", headers: map[string]string{"X-Test-Families": "bills,members"}, body: q("query Two { bills { nextCursor } members { nextCursor } }")}, 200,
			forwarded("Two", "bills,members", 2, q("query Two { bills { nextCursor } members { nextCursor } }")), nil},
		{"family outside entitlements refused", call{path: "/g", headers: map[string]string{"X-Test-Families": "bills,members"}, body: q("{ bills { nextCursor } regulatoryFilings { nextCursor } }")}, 403,
			`{"error":"Tier not entitled to this endpoint family"}`, nil},
		{"family hidden in a fragment refused", call{path: "/g", headers: map[string]string{"X-Test-Families": "bills"}, body: q("{ ... on Query { ...M } } fragment M on Query { members { nextCursor } }")}, 403,
			`{"error":"Tier not entitled to this endpoint family"}`, nil},
		{"aliased root field refused", call{path: "/g", headers: map[string]string{"X-Test-Families": "bills"}, body: q("{ bills: members { nextCursor } }")}, 403,
			`{"error":"Tier not entitled to this endpoint family"}`, nil},
		{"introspection belongs to no family", call{path: "/g", headers: map[string]string{"X-Test-Families": "bills"}, body: q("{ __type(name: \"Bill\") { name } __typename }")}, 200,
			forwarded("", "", 1, q("{ __type(name: \"Bill\") { name } __typename }")), nil},
		{"no entitlements means no check", call{path: "/civic", body: q("{ federalBudgets(input: {dataset: OUTLAYS}) { nextCursor } }")}, 200,
			forwarded("", "federal_budgets", 1, q("{ federalBudgets(input: {dataset: OUTLAYS}) { nextCursor } }")), nil},
		{"empty entitlements own nothing", call{path: "/g", body: q("{ bills(input: {limit: 1}) { nextCursor } }")}, 403,
			`{"error":"Tier not entitled to this endpoint family"}`, nil},
		{"civic.families placeholder refuses", call{path: "/civic", headers: map[string]string{"X-Test-Families": "bills"}, body: q("{ members { nextCursor } }")}, 403,
			`{"error":"Tier not entitled to this endpoint family"}`, nil},
		{"civic.families placeholder admits", call{path: "/civic", headers: map[string]string{"X-Test-Families": "members,bills"}, body: q("{ members { nextCursor } }")}, 200,
			forwarded("", "members", 1, q("{ members { nextCursor } }")), nil},

		// forwarding
		{"original body bytes forwarded untouched", call{path: "/g", headers: map[string]string{"X-Test-Families": "bills"}, body: "{ \"operationName\" : \"Bills\",\n \"query\":\"query Bills($n: Int) { bills(input: {limit: $n}) { nextCursor } }\", \"variables\": {\"n\": 3}, \"extensions\": {\"x\": 1} }"}, 200,
			forwarded("Bills", "bills", 1, "{ \"operationName\" : \"Bills\",\n \"query\":\"query Bills($n: Int) { bills(input: {limit: $n}) { nextCursor } }\", \"variables\": {\"n\": 3}, \"extensions\": {\"x\": 1} }"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, tc.call)
			if resp.StatusCode != tc.status || body != tc.body {
				t.Fatalf("got %d\n%s\nwant %d\n%s", resp.StatusCode, body, tc.status, tc.body)
			}
			if tc.status != 200 || strings.HasPrefix(body, `{"data":null`) {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
			}
			for k, v := range tc.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}
