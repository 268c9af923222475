package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

func TestBillByID(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	r := e.gql(`{ bill(id: "hr2882-118") { id officialTitle } }`, nil)
	if len(r.Errors) > 0 || !strings.Contains(string(r.Data["bill"]), `"officialTitle":"Clean Water Infrastructure Resilience Act"`) {
		t.Fatalf("known bill: %+v %s", r.Errors, r.Data["bill"])
	}
	status, body, _ := e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bill(id: \"hr1-1\") { id } }"}`), nil)
	if status != 200 || string(body) != `{"data":{"bill":null}}` {
		t.Fatalf("unknown bill = %d %s", status, body)
	}
	status, body, _ = e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bill(id: \"hr9-118\") { id } }"}`), nil)
	if status != 200 || string(body) != `{"data":{"bill":null}}` {
		t.Fatalf("deleted bill = %d %s", status, body)
	}
}

func TestGetBillsParityWithGraphQL(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	e.insertBills(100, 40)
	const full = `query($in: BillsInput) { bills(input: $in) { items { id congress type number officialTitle introducedDate
		memberName memberBioguideId memberByCongressKey committeeNames sourceUrl lastSyncedAt } nextCursor } }`
	for _, tc := range []struct {
		in     map[string]any
		params url.Values
	}{
		{map[string]any{}, url.Values{}},
		{map[string]any{"congress": 118, "limit": 7}, url.Values{"congress": {"118"}, "limit": {"7"}}},
		{map[string]any{"type": "s"}, url.Values{"type": {"s"}}},
		{map[string]any{"q": "H.R. 2882"}, url.Values{"q": {"H.R. 2882"}}},
	} {
		gp := e.list("bills", full, map[string]any{"in": tc.in})
		status, body := e.getBills(tc.params)
		if status != 200 {
			t.Fatalf("GET /bills?%s = %d %s", tc.params.Encode(), status, body)
		}
		var rp page
		if err := json.Unmarshal(body, &rp); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gp, rp) {
			t.Fatalf("parity %v:\nGraphQL %v\nREST    %v", tc.params, gp, rp)
		}
		// Follow one cursor on both surfaces.
		if gp.NextCursor != nil {
			tc.params.Set("cursor", *gp.NextCursor)
			in := copyMap(tc.in)
			in["cursor"] = *gp.NextCursor
			gp2 := e.list("bills", full, map[string]any{"in": in})
			_, body = e.getBills(tc.params)
			var rp2 page
			_ = json.Unmarshal(body, &rp2)
			if !reflect.DeepEqual(gp2, rp2) || len(gp2.Items) == 0 {
				t.Fatalf("second page parity differs")
			}
		}
	}
}

func TestGetBillsBadParameters(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, tc := range []struct {
		query, param string
	}{
		{"congress=abc", "congress"},
		{"congress=2170000000", "congress"}, // beyond GraphQL's Int and the int4 column (found by FuzzBillsQuery)
		{"congress=-2147483649", "congress"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=ten", "limit"},
		{"cursor=xyz", "cursor"},
		{"colour=red", "colour"},
		{"congress=1&congress=2", "congress"},
	} {
		status, body, hdr := e.do(http.MethodGet, "/bills?"+tc.query, nil, nil)
		var b struct {
			Errors []struct {
				Message string `json:"message"`
			} `json:"errors"`
		}
		if status != 400 || json.Unmarshal(body, &b) != nil || len(b.Errors) != 1 || !strings.Contains(b.Errors[0].Message, `"`+tc.param+`"`) {
			t.Errorf("GET /bills?%s = %d %s", tc.query, status, body)
		}
		if hdr.Get("Content-Type") != "application/json" {
			t.Errorf("content type %q", hdr.Get("Content-Type"))
		}
		var generic map[string]any
		_ = json.Unmarshal(body, &generic)
		if len(generic) != 1 {
			t.Errorf("body has extra members: %s", body)
		}
	}
}

func TestRequestErrorBodies(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, tc := range []struct {
		name   string
		body   string
		status int
	}{
		{"not json", `{"query":`, 400},
		{"query missing", `{"variables":{}}`, 400},
		{"query not a string", `{"query":42}`, 400},
		{"query null", `{"query":null}`, 400},
		{"variables not an object", `{"query":"{ bills { nextCursor } }","variables":[1]}`, 400},
		{"operationName not a string", `{"query":"{ bills { nextCursor } }","operationName":7}`, 400},
		{"operationName not in document", `{"query":"query A { bills { nextCursor } }","operationName":"B"}`, 400},
		{"variable does not coerce", `{"query":"query($n: Int) { bills(input: {congress: $n}) { nextCursor } }","variables":{"n":"x"}}`, 400},
		{"variable beyond 32 bits", `{"query":"query($n: Int) { bills(input: {congress: $n}) { nextCursor } }","variables":{"n":2170000000}}`, 400},
		{"required input variable missing", `{"query":"query($in: FederalBudgetsInput!) { federalBudgets(input: $in) { nextCursor } }"}`, 400},
	} {
		status, body, _ := e.do(http.MethodPost, "/graphql", []byte(tc.body), nil)
		var b map[string][]map[string]any
		if status != tc.status || json.Unmarshal(body, &b) != nil || len(b) != 1 || len(b["errors"]) != 1 || b["errors"][0]["message"] == "" {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	// A blank query: the gateway's exact 400, not gqlgen's 200 "no operation provided".
	for _, q := range []string{`{"query":""}`, `{"query":" \n, # only a comment\n"}`, `{"query":" ","operationName":"A"}`} {
		status, body, _ := e.do(http.MethodPost, "/graphql", []byte(q), nil)
		if want := `{"errors":[{"message":"Request body must contain a non-empty \"query\" string"}]}`; status != 400 || string(body) != want {
			t.Errorf("%s = %d %s, want 400 %s", q, status, body, want)
		}
	}
	status, _, hdr := e.do(http.MethodGet, "/graphql", nil, nil)
	if status != 405 || hdr.Get("Allow") != "POST" {
		t.Errorf("GET /graphql = %d Allow %q", status, hdr.Get("Allow"))
	}
	status, _, _ = e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bills { nextCursor } }"}`), map[string]string{"Content-Type": "text/plain"})
	if status != 415 {
		t.Errorf("text/plain = %d", status)
	}
}

func TestGraphQLClientMistakesAreBadUserInputWithNullData(t *testing.T) {
	e := newEnv(t, envOpts{})
	for field, q := range map[string]string{
		"federalBudgets": `{ federalBudgets(input: {dataset: OUTLAYS, bureau_code: "05"}) { nextCursor } }`,
		"members":        `{ members(input: {chamber: "parliament"}) { nextCursor } }`,
	} {
		assertBadUserInput(t, e.gql(q, nil), field)
	}
	for _, q := range []string{
		`{ federalBudgets(input: {dataset: APPROPRIATIONS, month: "2025-01"}) { nextCursor } }`,
		`{ federalBudgets(input: {dataset: OUTLAYS, month: "2025-1"}) { nextCursor } }`,
		`{ federalBudgets(input: {dataset: OUTLAYS, month: "January"}) { nextCursor } }`,
	} {
		assertBadUserInput(t, e.gql(q, nil), "federalBudgets")
	}
	// Text PostgreSQL cannot hold is a client mistake, not a fault.
	assertBadUserInput(t, e.gql(`query($q: String) { bills(input: {q: $q}) { nextCursor } }`, map[string]any{"q": "a\x00b"}), "bills")
	assertBadUserInput(t, e.gql(`query($n: String) { lobbyingDisclosures(input: {client_name: $n}) { nextCursor } }`, map[string]any{"n": "\x00"}), "lobbyingDisclosures")
	// A non-integer number in variables does not coerce: 400, not a fault.
	status, body, _ := e.do(http.MethodPost, "/graphql", mustJSON(map[string]any{
		"query": `query($in: BillsInput) { bills(input: $in) { nextCursor } }`, "variables": map[string]any{"in": map[string]any{"congress": 1.5}}}), nil)
	if status != 400 || !strings.HasPrefix(string(body), `{"errors":[{"message":`) {
		t.Fatalf("congress 1.5 = %d %s", status, body)
	}
	// Parse and validation errors: 200, data null.
	for _, q := range []string{`{ bills {`, `{ nope }`, `{ federalBudgets { nextCursor } }`, `mutation { x }`} {
		status, body, _ := e.do(http.MethodPost, "/graphql", mustJSON(map[string]any{"query": q}), nil)
		var b map[string]json.RawMessage
		if status != 200 || json.Unmarshal(body, &b) != nil || string(b["data"]) != "null" || len(b["errors"]) < 3 {
			t.Errorf("%q = %d %s", q, status, body)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestIdentityRequired(t *testing.T) {
	e := newEnv(t, envOpts{})
	expired, _ := contract.SignIdentity(identitySecret, contract.Caller{KeyID: "k", Org: "o", Tier: "free", Env: "test"}, time.Now().Add(-2*time.Minute), 30*time.Second)
	forged, _ := contract.SignIdentity([]byte("another-secret-another-secret-!!"), contract.Caller{KeyID: "k", Org: "o", Tier: "free", Env: "test"}, time.Now(), 30*time.Second)
	for name, tok := range map[string]string{"missing": "", "expired": expired, "forged": forged, "garbage": "not.a.jwt"} {
		for _, path := range []string{"/graphql", "/bills"} {
			method := http.MethodGet
			var body []byte
			if path == "/graphql" {
				method, body = http.MethodPost, []byte(`{"query":"{ bills { nextCursor } }"}`)
			}
			req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(string(body)))
			if tok != "" {
				req.Header.Set(contract.IdentityHeader, tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var b map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&b)
			resp.Body.Close()
			if resp.StatusCode != 401 || len(b) != 1 || b["error"] != "Missing gateway identity" {
				t.Errorf("%s identity on %s = %d %v", name, path, resp.StatusCode, b)
			}
		}
	}
	resp, err := http.Get(e.srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz without identity: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestDatabaseDownIs500AndLeaksNothing(t *testing.T) {
	e, proxy := newProxiedEnv(t)
	e.list("bills", billsIDsQuery, nil)
	proxy.Cut()
	status, body, hdr := e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bills { items { id } nextCursor } }"}`), nil)
	if status != 500 || string(body) != `{"error":"Internal Server Error"}` || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("graphql with DB down = %d %s", status, body)
	}
	status, body = e.getBills(url.Values{"congress": {"118"}})
	if status != 500 || string(body) != `{"error":"Internal Server Error"}` {
		t.Fatalf("GET /bills with DB down = %d %s", status, body)
	}
	status, _, _ = e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bill(id: \"hr2882-118\") { id } }"}`), nil)
	if status != 500 {
		t.Fatalf("bill with DB down = %d", status)
	}
	resp, err := http.Get(e.srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("healthz with DB down: %v %v", resp, err)
	}
	resp.Body.Close()
	if logs := e.logs.String(); strings.Contains(logs, "SELECT") || strings.Contains(logs, "eyJ") {
		t.Fatalf("log leaks SQL or token:\n%s", logs)
	}
	proxy.Restore()
	testenv.Eventually(t, 10*time.Second, "recovery after Restore", func() error {
		if status, body, _ := e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bills { nextCursor } }"}`), nil); status != 200 {
			return fmt.Errorf("graphql answers %d %s", status, body)
		}
		return nil
	})
}

func TestDeadlineInsideResolverIs500(t *testing.T) {
	e := newEnv(t, envOpts{queryTimeout: time.Nanosecond})
	status, body, _ := e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bills { items { id } nextCursor } }"}`), nil)
	if status != 500 || string(body) != `{"error":"Internal Server Error"}` {
		t.Fatalf("deadline = %d %s", status, body)
	}
}

func TestIntrospectionAndTypename(t *testing.T) {
	e := newEnv(t, envOpts{})
	r := e.gql(`{ __schema { queryType { name fields { name } } } bills { __typename nextCursor } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	s := string(r.Data["__schema"])
	for _, f := range []string{"bills", "bill", "members", "regulatoryFilings", "federalBudgets", "lobbyingDisclosures"} {
		if !strings.Contains(s, `"name":"`+f+`"`) {
			t.Errorf("root field %s missing from introspection: %s", f, s)
		}
	}
	if string(r.Data["bills"]) != `{"__typename":"BillsPage","nextCursor":null}` {
		t.Errorf("bills = %s", r.Data["bills"])
	}
}

// TestDocumentErrors: parse and validation errors are the client's, answered
// 200 with data null and the validator's message (docs/api.md "Errors"), never logged
// as faults; an Int literal beyond 32 bits is one of them (it used to reach
// PostgreSQL and answer 500).
func TestDocumentErrors(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, tc := range []struct{ name, query, message, code string }{
		{"syntax", `{ bills { nextCursor }`, "Expected Name, found <EOF>", "GRAPHQL_PARSE_FAILED"},
		{"unknown field", `{ bills { nextCursr } }`, `Cannot query field "nextCursr" on type "BillsPage". Did you mean "nextCursor"?`, "GRAPHQL_VALIDATION_FAILED"},
		{"Int literal beyond 32 bits", `{ bills(input: {congress: 2170000000}) { nextCursor } }`, "Int cannot represent non 32-bit signed integer value: 2170000000", "GRAPHQL_VALIDATION_FAILED"},
		{"Int literal beyond 32 bits, other family", `{ lobbyingDisclosures(input: {filing_year: -2147483649}) { nextCursor } }`, "Int cannot represent non 32-bit signed integer value: -2147483649", "GRAPHQL_VALIDATION_FAILED"},
	} {
		body, _ := json.Marshal(map[string]any{"query": tc.query})
		status, b, _ := e.do(http.MethodPost, "/graphql", body, nil)
		var r struct {
			Data   *json.RawMessage `json:"data"`
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if status != 200 || json.Unmarshal(b, &r) != nil || r.Data != nil || len(r.Errors) != 1 ||
			r.Errors[0].Message != tc.message || r.Errors[0].Extensions["code"] != tc.code {
			t.Errorf("%s: %d %s", tc.name, status, b)
		}
	}
	if strings.Contains(e.logs.String(), "fault") {
		t.Errorf("document errors logged as faults:\n%s", e.logs.String())
	}
}
