package e2e

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

const billsDoc = `{"query":"{ bills(input:{limit:1}) { items { id } nextCursor } }"}`

func testErrors(t *testing.T, s *stack.Stack, k keys) {
	type row struct {
		name, method, path, key, ctype, body string
		status                               int
		want                                 string
		header, value                        string
	}
	big := `{"query":"{ bills { nextCursor } }","variables":{"pad":"` + strings.Repeat("x", 200<<10) + `"}}`
	rows := []row{
		{"missing token", "POST", "/v1/graphql", "", "application/json", billsDoc, 401, `{"error":"Missing bearer token"}`, "WWW-Authenticate", `Bearer realm="civicgate"`},
		{"unknown key", "POST", "/v1/graphql", "cg_live_0000000000000000000000000000000000000000000", "application/json", billsDoc, 401, `{"error":"Invalid API key"}`, "WWW-Authenticate", `Bearer realm="civicgate"`},
		{"revoked key", "POST", "/v1/graphql", k.revoked, "application/json", billsDoc, 401, `{"error":"API key revoked"}`, "WWW-Authenticate", `Bearer realm="civicgate"`},
		{"other environment", "POST", "/v1/graphql", k.testEnv, "application/json", billsDoc, 401, `{"error":"API key not valid in this environment"}`, "", ""},
		{"suspended", "POST", "/v1/graphql", k.suspended, "application/json", billsDoc, 403, `{"error":"Organization suspended"}`, "", ""},
		{"tier not entitled", "POST", "/v1/graphql", k.free, "application/json", `{"query":"{ regulatoryFilings { nextCursor } }"}`, 403, `{"error":"Tier not entitled to this endpoint family"}`, "", ""},
		{"GET graphql", "GET", "/v1/graphql", k.enterprise, "", "", 405, "", "Allow", "POST"},
		{"not JSON", "POST", "/v1/graphql", k.enterprise, "text/plain", billsDoc, 415, "", "", ""},
		{"too large", "POST", "/v1/graphql", k.enterprise, "application/json", big, 413, `{"errors":[{"message":"Request body too large"}]}`, "", ""},
		{"bad JSON", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":`, 400, "", "", ""},
		{"query missing", "POST", "/v1/graphql", k.enterprise, "application/json", `{}`, 400, "", "", ""},
		{"token in document", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":"{ bills(input:{q:\"` + k.enterprise + `\"}) { nextCursor } }"}`, 400, "", "", ""},
		{"validation error", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":"{ bills { nope } }"}`, 200, "", "", ""},
		{"limit out of range", "POST", "/v1/graphql", k.enterprise, "application/json", `{"query":"{ bills(input:{limit:101}) { nextCursor } }"}`, 200, "", "", ""},
		{"unknown path", "GET", "/nope", k.enterprise, "", "", 404, `{"error":"Not Found"}`, "", ""},
		{"bills bad limit", "GET", "/bills?limit=0", k.enterprise, "", "", 400, "", "", ""},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var body io.Reader
			if r.body != "" {
				body = strings.NewReader(r.body)
			}
			resp, got := do(t, s, r.method, r.path, r.key, r.ctype, body)
			if resp.StatusCode != r.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, r.status, got)
			}
			if r.want != "" && got != r.want {
				t.Fatalf("body %s, want %s", got, r.want)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q", ct)
			}
			if r.header != "" && resp.Header.Get(r.header) != r.value {
				t.Fatalf("%s: %q, want %q", r.header, resp.Header.Get(r.header), r.value)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Fatal("no X-Request-Id")
			}
			checkShape(t, r.status, got)
		})
	}
}

// checkShape checks the body shape rules of docs/api.md "Errors" for every status.
func checkShape(t *testing.T, status int, body string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("body is not a JSON object: %s", body)
	}
	switch {
	case status == 200:
		if string(m["data"]) != "null" || len(m["errors"]) < 3 || len(m) != 2 {
			t.Fatalf("200 body not {data:null, errors:[…]}: %s", body)
		}
	case status == 400 || status == 405 || status == 413 || status == 415:
		var errs struct {
			Errors []struct {
				Message string `json:"message"`
			} `json:"errors"`
		}
		if err := json.Unmarshal([]byte(body), &errs); err != nil || len(m) != 1 || len(errs.Errors) == 0 || errs.Errors[0].Message == "" {
			t.Fatalf("%d body not {errors:[{message}]}: %s", status, body)
		}
	default:
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || len(m) != 1 || e.Error == "" {
			t.Fatalf("%d body not {error:string}: %s", status, body)
		}
	}
}
