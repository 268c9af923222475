package tooldef

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func resultText(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("content %v", r.Content)
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", r.Content[0])
	}
	return tc.Text
}

func TestResultData(t *testing.T) {
	body := []byte("{\n  \"data\": {\"bills\": {\"items\": [ {\"id\": \"hr1-118\"} ], \"nextCursor\": null}},\n  \"extensions\": {\"cost\": 12}\n}")
	r := Result(200, body, "")
	if r.IsError {
		t.Fatalf("error result: %v", resultText(t, r))
	}
	const compact = `{"bills":{"items":[{"id":"hr1-118"}],"nextCursor":null}}`
	if got := resultText(t, r); got != compact {
		t.Errorf("text %s", got)
	}
	if sc, ok := r.StructuredContent.(json.RawMessage); !ok || string(sc) != compact {
		t.Errorf("structuredContent %v", r.StructuredContent)
	}
	// As the SDK sends it.
	wire, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(wire), `"structuredContent":`+compact) {
		t.Errorf("on the wire: %s", wire)
	}
	// An unknown bill is data, not an error (docs/design.md D10).
	if r := Result(200, []byte(`{"data":{"bill":null}}`), ""); r.IsError || resultText(t, r) != `{"bill":null}` {
		t.Errorf("bill null: %+v", r)
	}
}

func TestResultErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		retryAfter string
		want       string
	}{
		{"graphql error", 200,
			`{"data":null,"errors":[{"message":"chamber must be house or senate","locations":[{"line":1,"column":3}],"path":["members"],"extensions":{"code":"BAD_USER_INPUT","stack":"at internal/secret.go:12"}}]}`, "",
			"GraphQL error: chamber must be house or senate (code BAD_USER_INPUT, at members)"},
		{"partial data", 200,
			`{"data":{"bills":{"items":[null]}},"errors":[{"message":"a","path":["bills","items",0,"title"]},{"message":"b\nsecond line"}]}`, "",
			"GraphQL errors:\n- a (at bills.items.0.title)\n- b second line"},
		{"validation refusal", 200,
			`{"data":null,"errors":[{"message":"Query exceeds the maximum depth of 10","extensions":{"code":"QUERY_TOO_DEEP"}}]}`, "",
			"GraphQL error: Query exceeds the maximum depth of 10 (code QUERY_TOO_DEEP)"},
		{"request error", 400, `{"errors":[{"message":"Request body must be JSON"}]}`, "", "GraphQL error: Request body must be JSON"},
		{"rate limit", 429, `{"error":"Rate limit exceeded"}`, "12", "Rate limit exceeded (HTTP 429; retry after 12 s)"},
		{"not entitled", 403, `{"error":"Tier not entitled to this endpoint family"}`, "", "Tier not entitled to this endpoint family (HTTP 403)"},
		{"html page", 502, `<html><body>upstream stack trace</body></html>`, "", "The GraphQL endpoint answered HTTP 502 without a GraphQL result."},
		{"other json", 500, `{"detail":"pq: relation does not exist"}`, "", "The GraphQL endpoint answered HTTP 500 without a GraphQL result."},
		{"no data", 200, `{"data":null}`, "", "The GraphQL endpoint answered without data."},
		{"odd code", 200, `{"errors":[{"message":"m","extensions":{"code":"lower case"},"path":["a b"]}]}`, "", "GraphQL error: m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Result(tc.status, []byte(tc.body), tc.retryAfter)
			if !r.IsError || r.StructuredContent != nil {
				t.Fatalf("IsError %v, structuredContent %v", r.IsError, r.StructuredContent)
			}
			if got := resultText(t, r); got != tc.want {
				t.Errorf("text %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestResultErrorBounds(t *testing.T) {
	var errs []string
	for range 9 {
		errs = append(errs, `{"message":"`+strings.Repeat("é", 400)+`"}`)
	}
	r := Result(200, []byte(`{"errors":[`+strings.Join(errs, ",")+`]}`), "")
	text := resultText(t, r)
	if strings.Count(text, "\n- ") != 6 || !strings.HasSuffix(text, "(and 4 more)") {
		t.Errorf("not 5 errors and a count: %q", text)
	}
	for line := range strings.Lines(text) {
		if len(line) > maxMessageLength+8 || !strings.Contains(line, "…") && strings.Contains(line, "é") {
			t.Errorf("a line not clipped: %d bytes", len(line))
		}
	}
	if !strings.Contains(text, "é…") {
		t.Errorf("clipped in the middle of a character? %q", text[:60])
	}
}
