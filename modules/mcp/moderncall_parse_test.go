package mcp

import (
	"reflect"
	"testing"
)

// parseModernCall's one pass reads every message as the checked reading
// does: the same call, or the same error.
func FuzzParseModernCall(f *testing.F) {
	for _, s := range []string{
		string(modernCallBody),
		modernBody("1", "tools/call", `"name":"get_book","arguments":{"id":"b1"}`),
		modernBody(`"x"`, "tools/call", `"name":5`),
		modernBody("null", "tools/call", `"name":"a"`),
		modernBody("1.5", "tools/call", `"name":"a","name":"b"`),
		`{"jsonrpc":1,"id":1,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`,
		`{"jsonrpc":"2.0","id":{},"params":{"name":[]}}`,
		`{"jsonrpc":"2.0","id":1,"params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"v","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"n"}}}}`,
		`[`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c1, e1 := parseModernCall(body)
		c2, e2 := parseModernCallChecked(body)
		if !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(e1, e2) {
			t.Errorf("%q: one pass %+v %v, checked %+v %v", body, c1, e1, c2, e2)
		}
	})
}
