package httpapi_test

import (
	"net/http"
	"testing"
)

const (
	ctJSON = "application/json"
	ctGR   = "application/graphql-response+json; charset=utf-8"
)

// TestGraphQLResponseMediaNegotiation: which media type each Accept gets on a success (docs/design.md D42,
// docs/api.md "Content types"), q-values and specificity included; application/json answers stay byte for byte.
func TestGraphQLResponseMediaNegotiation(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	const query = `{"query":"{ bill(id: \"hr1-1\") { id } }"}`
	for _, tc := range []struct {
		accept string
		want   string
	}{
		{"", ctJSON},
		{"application/json", ctJSON},
		{"*/*", ctJSON},
		{"application/*", ctJSON},
		{"text/html", ctJSON}, // accepts neither: answered in the default, not 406
		{"application/graphql-response+json", ctGR},
		{"Application/GraphQL-Response+JSON", ctGR},
		{"application/graphql-response+json;charset=utf-8", ctGR},
		{"application/graphql-response+json, application/json;q=0.9", ctGR}, // Apollo Client
		{"application/json;q=0.9, application/graphql-response+json", ctGR},
		{"application/json, application/graphql-response+json", ctGR}, // a tie between named types
		{"application/graphql-response+json, application/json", ctGR},
		{"application/graphql-response+json;q=0.5, application/json", ctJSON},
		{"application/graphql-response+json;q=0", ctJSON},
		{"application/graphql-response+json;q=0, */*", ctJSON},
		{"application/json;q=0, */*", ctGR},                    // JSON refused by name: the wildcard reaches the other
		{"application/graphql-response+json, */*;q=0.1", ctGR}, // named beats a wildcard
		{"*/*, application/graphql-response+json", ctGR},       // same weight: the named one
		{"application/graphql-response+json;q=bogus, application/json;q=0.1", ctJSON},
	} {
		hdr := map[string]string{"Accept": tc.accept}
		status, body, h := e.do(http.MethodPost, "/graphql", []byte(query), hdr)
		if status != 200 || string(body) != `{"data":{"bill":null}}` || h.Get("Content-Type") != tc.want {
			t.Errorf("Accept %q: %d %q %s, want 200 %q", tc.accept, status, h.Get("Content-Type"), body, tc.want)
		}
		if h.Get("Vary") != "Accept" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("Accept %q: Vary %q, nosniff %q", tc.accept, h.Get("Vary"), h.Get("X-Content-Type-Options"))
		}
	}
}

// TestGraphQLResponseMediaStatuses: the status codes application/graphql-response+json requires
// (GraphQL over HTTP, "Status Codes"), while application/json keeps the statuses and bodies of docs/api.md.
func TestGraphQLResponseMediaStatuses(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	for _, tc := range []struct {
		name         string
		body         string
		ctype        string // request Content-Type; "" for application/json
		jsonStatus   int
		jsonBody     string // "" : not compared
		grStatus     int
		grBody       string
		grCType      string
		sameJSONBody bool
	}{
		{name: "validation error", body: `{"query":"{ nope }"}`,
			jsonStatus: 200, jsonBody: `{"errors":[{"message":"Cannot query field \"nope\" on type \"Query\".","locations":[{"line":1,"column":3}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}],"data":null}`,
			grStatus: 400, grBody: `{"errors":[{"message":"Cannot query field \"nope\" on type \"Query\".","locations":[{"line":1,"column":3}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`, grCType: ctGR},
		{name: "parse error", body: `{"query":"{"}`,
			jsonStatus: 200, grStatus: 400, grCType: ctGR},
		{name: "field error keeps data null and 200", body: `{"query":"{ bills(input:{limit:101}) { nextCursor } }"}`,
			jsonStatus: 200, grStatus: 200, grCType: ctGR, sameJSONBody: true},
		{name: "body not JSON", body: `{"query":`,
			jsonStatus: 400, jsonBody: `{"errors":[{"message":"Request body is not valid JSON"}]}`,
			grStatus: 400, grBody: `{"errors":[{"message":"Request body is not valid JSON"}]}`, grCType: ctGR},
		{name: "variable that does not coerce", body: `{"query":"query($n:Int){ bills(input:{limit:$n}) { nextCursor } }","variables":{"n":"x"}}`,
			jsonStatus: 400, grStatus: 400, grCType: ctGR, sameJSONBody: true},
		{name: "unknown operationName", body: `{"query":"query A { __typename }","operationName":"B"}`,
			jsonStatus: 400, grStatus: 400, grCType: ctGR, sameJSONBody: true},
		{name: "no Content-Type", body: `{"query":"{ __typename }"}`, ctype: "-",
			jsonStatus: 415, jsonBody: `{"errors":[{"message":"Content-Type must be application/json"}]}`,
			grStatus: 415, grBody: `{"errors":[{"message":"Content-Type must be application/json"}]}`, grCType: ctGR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := func(accept string) map[string]string {
				h := map[string]string{"Accept": accept}
				if tc.ctype == "-" {
					h["Content-Type"] = ""
				}
				return h
			}
			js, jb, jh := e.do(http.MethodPost, "/graphql", []byte(tc.body), hdr("application/json"))
			if js != tc.jsonStatus || jh.Get("Content-Type") != ctJSON || (tc.jsonBody != "" && string(jb) != tc.jsonBody) {
				t.Errorf("application/json: %d %q %s", js, jh.Get("Content-Type"), jb)
			}
			gs, gb, gh := e.do(http.MethodPost, "/graphql", []byte(tc.body), hdr("application/graphql-response+json"))
			if gs != tc.grStatus || gh.Get("Content-Type") != tc.grCType || (tc.grBody != "" && string(gb) != tc.grBody) {
				t.Errorf("graphql-response+json: %d %q %s", gs, gh.Get("Content-Type"), gb)
			}
			if tc.sameJSONBody && string(gb) != string(jb) {
				t.Errorf("bodies differ:\n json %s\n gr   %s", jb, gb)
			}
			if tc.grStatus == 400 && tc.grBody == "" {
				if m, err := (auditAnswer{body: gb}).executionResult(); err != nil || m["data"] != nil || m["errors"] == nil {
					t.Errorf("graphql-response+json request error must have errors and no data: %s", gb)
				}
			}
		})
	}
}

// TestGraphQLResponseMediaLeavesOtherBodies: the 403 and 401 bodies are not GraphQL responses and keep
// application/json whatever the client accepts.
func TestGraphQLResponseMediaLeavesOtherBodies(t *testing.T) {
	e := newEnv(t, envOpts{})
	hdr := map[string]string{"Accept": "application/graphql-response+json", "X-Civic-Identity": assertion(t, "members")}
	status, body, h := e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bills { nextCursor } }"}`), hdr)
	if status != 403 || string(body) != notEntitled || h.Get("Content-Type") != ctJSON {
		t.Errorf("not entitled: %d %q %s", status, h.Get("Content-Type"), body)
	}
	hdr["X-Civic-Identity"] = "forged"
	status, body, h = e.do(http.MethodPost, "/graphql", []byte(`{"query":"{ bills { nextCursor } }"}`), hdr)
	if status != 401 || string(body) != `{"error":"Missing gateway identity"}` || h.Get("Content-Type") != ctJSON {
		t.Errorf("no identity: %d %q %s", status, h.Get("Content-Type"), body)
	}
}
