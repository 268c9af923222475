package mcp

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/contract"
)

// The one decode of a modern call (parseModernMessage) decides only what
// readHead and parseModernCall, run one after the other, decide the same:
// the head, the call and its error (docs/design.md D84).
func TestParseModernMessageAgrees(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}
	bodies := []string{
		string(modernCallBody),
		call(`"abc"`, `{"name":"get_book","arguments":{"id":"b1"},`+meta+`}`),
		call(`"a\u0062"`, `{"name":"get_book",`+meta+`}`),
		call(`1.5`, `{"name":"get_book",`+meta+`}`),
		call(`-0`, `{"name":"get_book",`+meta+`}`),
		call(`1e3`, `{"name":"get_book",`+meta+`}`),
		call(`12345678901234567`, `{"name":"get_book",`+meta+`}`),
		call(`null`, `{"name":"get_book",`+meta+`}`),
		call(`true`, `{"name":"get_book",`+meta+`}`),
		call(`{}`, `{"name":"get_book",`+meta+`}`),
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_book",` + meta + `}}`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"get_book",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		call(`1`, `null`),
		call(`1`, `[]`),
		call(`1`, `{}`),
		call(`1`, `{"name":7,`+meta+`}`),
		call(`1`, `{"name":""}`),
		call(`1`, `{"name":"get_book"}`),
		call(`1`, `{"name":"get_book","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`),
		call(`1`, `{"name":"get_book","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`),
		call(`1`, `{"name":"get_book","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"x"}}}`),
		call(`1`, `{"name":"get_book","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}`),
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"get_book",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{"name":"get_book",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","params":{"name":"get_book",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":7,"params":{"name":"get_book",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"get_book",` + meta + `}}`,
		call(`1`, `{"name":"get_book","arguments":`+strings.Repeat("[", 1001)+strings.Repeat("]", 1001)+`,`+meta+`}`),
		`not json`,
		`[]`,
	}
	parsedAny := false
	for _, body := range bodies {
		parsedAny = checkOneDecode(t, []byte(body)) || parsedAny
	}
	if !parsedAny {
		t.Fatal("no body decided in one decode")
	}
	if _, _, _, ok := parseModernMessage(modernCallBody); !ok {
		t.Error("a client's call is not read in one decode")
	}
}

// FuzzParseModernMessage: whatever the one decode decides, readHead and
// parseModernCall decide the same.
func FuzzParseModernMessage(f *testing.F) {
	f.Add(modernCallBody)
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkOneDecode(t, body) })
}

// checkOneDecode compares parseModernMessage with readHead and
// parseModernCall on body; it reports whether the one decode decided.
func checkOneDecode(t *testing.T, body []byte) bool {
	t.Helper()
	head, c, rpcErr, ok := parseModernMessage(body)
	if !ok {
		return false
	}
	wantHead, err := readHead(body)
	if err != nil {
		t.Errorf("%s: decided, where readHead refuses it: %v", body, err)
		return true
	}
	if !reflect.DeepEqual(head, wantHead) {
		t.Errorf("%s: head %+v, readHead's %+v", body, head, wantHead)
	}
	wantC, wantErr := parseModernCall(body)
	if !reflect.DeepEqual(c, wantC) || !reflect.DeepEqual(rpcErr, wantErr) {
		t.Errorf("%s: %+v %v, parseModernCall's %+v %v", body, c, rpcErr, wantC, wantErr)
	}
	return true
}

// A call refused from its headers (a tool the tier lacks) costs civic_mcp
// at most one allocation: the refusal's body and header values are made
// once per family, the caller's families joined once per set (D84).
func TestModernRefusalAllocations(t *testing.T) {
	c := startChain(t, 10)
	h := c.mcpHandler(t)
	r := httptest.NewRequest(http.MethodPost, "/v1/mcp", bytes.NewReader(modernCallBody))
	c.modern(r, c.readerKey, "tools/call", "member_loans")
	var q contract.Request
	q.SetCredential(&contract.Caller{KeyID: "benchreader", Families: []string{"catalog", "events"}}, c.readerKey, nil)
	r = r.WithContext(contract.WithRequest(r.Context(), q))
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		t.Error("the refused call reached the rest of the route")
		return nil
	})
	w := &recorder{h: http.Header{}}
	serve := func() {
		w.reset()
		if err := h.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
	}
	serve()
	if w.status != http.StatusForbidden || !strings.Contains(w.body.String(), `"code":-31030`) ||
		w.h.Get(contract.HeaderRefusedFamily) != "loans" {
		t.Fatalf("answer %d %v %s", w.status, w.h, w.body.String())
	}
	if n := testing.AllocsPerRun(200, serve); n > 1 {
		t.Errorf("%.1f allocations per refusal, want at most 1", n)
	}
}
