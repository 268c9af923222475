package mcp

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// What civic_mcp writes itself in revision 2026-07-28 — the part of the
// protocol the go-sdk does not write for it (modern.go, listen.go) — is
// valid against the revision's schema: testdata/mcp-2026-07-28-schema.json,
// schema/2026-07-28/schema.json of github.com/modelcontextprotocol/
// modelcontextprotocol at commit b0f60ba5409db7a6582440a7b473cc0398890f15.
// The go-sdk's own answers (server/discover, tools/list) are checked too.

// schemaDef resolves one $defs entry of the vendored schema.
func schemaDef(t *testing.T, defs json.RawMessage, name string) *jsonschema.Resolved {
	t.Helper()
	raw := `{"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"#/$defs/` + name + `","$defs":` + string(defs) + `}`
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func TestModernAnswersMatchTheSchema(t *testing.T) {
	data, err := os.ReadFile("testdata/mcp-2026-07-28-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	post := func(body string, h map[string]string) string {
		return g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(body), h).body
	}
	call := modernBody("5", "tools/call", `"name":"get_book","arguments":{"id":"b1"}`)
	withName := func(name string) map[string]string { return modernHeaders("tools/call", name) }
	for _, c := range []struct {
		what, def, body string
		result          string // the $def of the response's result, or "!" and its error's, if any
	}{
		{"a call", "JSONRPCResultResponse", post(call, withName("get_book")), "CallToolResult"},
		{"a tool error", "JSONRPCResultResponse", post(modernBody("6", "tools/call", `"name":"get_book","arguments":{"id":7}`), withName("get_book")), "CallToolResult"},
		{"server/discover", "JSONRPCResultResponse", post(modernBody("7", methodDiscover, ""), modernHeaders(methodDiscover, "")), "DiscoverResult"},
		{"tools/list", "JSONRPCResultResponse", post(modernBody("8", "tools/list", ""), modernHeaders("tools/list", "")), "ListToolsResult"},
		{"Mcp-Name not the body's", "HeaderMismatchError", post(call, withName("list_books")), ""},
		{"no Mcp-Name", "HeaderMismatchError", post(call, withName("")), ""},
		{"an unknown version", "UnsupportedProtocolVersionError", post(call, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2099-01-01"}), ""},
		{"not entitled", "JSONRPCErrorResponse", post(modernBody("9", "tools/call", `"name":"member_loans"`), withName("member_loans")), ""},
		{"no _meta", "JSONRPCErrorResponse", post(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_book"}}`, withName("get_book")), "!InvalidParamsError"},
		{"ping", "JSONRPCErrorResponse", post(modernBody("11", "ping", ""), modernHeaders("ping", "")), "!MethodNotFoundError"},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.body), &v); err != nil {
			t.Fatalf("%s: %s", c.what, c.body)
		}
		if err := schemaDef(t, doc.Defs, c.def).Validate(v); err != nil {
			t.Errorf("%s is not a %s: %v\n%s", c.what, c.def, err, c.body)
		}
		if c.result != "" {
			member, def := "result", c.result
			if e, ok := strings.CutPrefix(def, "!"); ok {
				member, def = "error", e
			}
			if err := schemaDef(t, doc.Defs, def).Validate(v.(map[string]any)[member]); err != nil {
				t.Errorf("%s: the %s is not a %s: %v\n%s", c.what, member, def, err, c.body)
			}
		}
	}

	// The listen stream's messages.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.base+"/v1/mcp",
		strings.NewReader(modernBody("12", methodListen, `"notifications":{"toolsListChanged":true}`)))
	req.Header.Set("Authorization", "Bearer "+reader.Key)
	for k, v := range modernHeaders(methodListen, "") {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	ack, _ := strings.CutPrefix(strings.TrimSpace(string(buf[:n])), "event: message\ndata: ")
	var v any
	if err := json.Unmarshal([]byte(ack), &v); err != nil {
		t.Fatalf("acknowledgement %q", buf[:n])
	}
	if err := schemaDef(t, doc.Defs, "SubscriptionsAcknowledgedNotification").Validate(v); err != nil {
		t.Errorf("the acknowledgement: %v\n%s", err, ack)
	}
	for _, m := range []struct{ def, body string }{
		{"ToolListChangedNotification", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":12}}}`},
		{"JSONRPCResultResponse", `{"jsonrpc":"2.0","id":12,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":12}}}`},
	} {
		_ = json.Unmarshal([]byte(m.body), &v)
		if err := schemaDef(t, doc.Defs, m.def).Validate(v); err != nil {
			t.Errorf("%s as listen.go writes it: %v", m.def, err)
		}
	}
}
