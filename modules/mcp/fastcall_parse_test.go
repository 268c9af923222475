package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/modules/mcp/tooldef"
)

// What the fast path takes as a plain tools/call, and what it leaves to
// the SDK.
func TestParsePlainCall(t *testing.T) {
	for body, want := range map[string]string{ // want: id|name|arguments, or "" for the SDK's
		callBody("1", "get_book", `{"id":"b1"}`):                                                        `1|get_book|{"id":"b1"}`,
		callBody(`"x y"`, "get_book", ``):                                                               `"x y"|get_book|`,
		callBody("-0", "t", `null`):                                                                     `0|t|null`,
		callBody("999999999999999", "t", `{}`):                                                          `999999999999999|t|{}`,
		`{"params":{"arguments":[],"name":"t"},"id":2,"method":"tools/call","jsonrpc":"2.0"}`:           `2|t|[]`,
		callBody("1.0", "t", `{}`):                                                                      "",
		callBody("1e2", "t", `{}`):                                                                      "",
		callBody("01", "t", `{}`):                                                                       "",
		callBody("1234567890123456", "t", `{}`):                                                         "",
		callBody("true", "t", `{}`):                                                                     "",
		callBody("null", "t", `{}`):                                                                     "",
		callBody(`"\u0041"`, "t", `{}`):                                                                 "",
		callBody("1", `t\u0041`, `{}`):                                                                  "",
		callBody("1", "t", strings.Repeat("[", 1000)+strings.Repeat("]", 1000)):                         "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{},"name":"t"}}`:               "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","requestState":""}}`:        "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`:                      "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`:                                  "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"t"}}`:                          "",
		`{"jsonrpc":"2.0","ID":1,"method":"tools/call","params":{"name":"t"}}`:                          "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":0}`:                    "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}`:                          "",
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t"}}`:                         "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":"\xff"}}}`: "",
	} {
		got := ""
		if c, ok := parsePlainCall([]byte(body)); ok {
			id, _ := json.Marshal(c.id.Raw())
			got = string(id) + "|" + c.name + "|" + string(c.arguments)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// FuzzParsePlainCall: whatever the fast path takes as a plain tools/call,
// the SDK's own decoder (jsonrpc.DecodeMessage: segmentio, case-sensitive,
// depth-bounded) reads as the same call: a request, tools/call, the same
// id; and its params hold the same name and arguments.
func FuzzParsePlainCall(f *testing.F) {
	for _, s := range []string{
		callBody("1", "get_book", `{"id":"b1"}`), callBody(`"a"`, "t", ``), callBody("-0", "t", `null`),
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"t","name":"u"}}`,
		`{"jsonrpc":"2.0","ID":1,"id":3,"method":"tools/call","params":{"Name":"x","name":"t"}}`,
		`{ "params" : { "name" : "t" } , "jsonrpc" : "2.0" , "method" : "tools/call" , "id" : "é" }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, ok := parsePlainCall(body)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			t.Fatalf("the fast path took %q, the SDK's decoder refuses it: %v", body, err)
		}
		req, isReq := msg.(*jsonrpc.Request)
		if !isReq || req.Method != methodToolCall || req.ID != c.id {
			t.Fatalf("%q: the SDK reads %#v, the fast path id %v", body, msg, c.id.Raw())
		}
		var p struct {
			Name      *string         `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Name == nil || *p.Name != c.name || !bytes.Equal(p.Arguments, c.arguments) {
			t.Fatalf("%q: params %s, the fast path %q %s", body, req.Params, c.name, c.arguments)
		}
	})
}

// encodeCallAnswer writes what the SDK writes for a handler's result:
// jsonrpc2's NewResponse (the result marshaled without HTML escaping) in
// EncodeMessage's envelope.
func TestEncodeCallAnswerIsTheSDKs(t *testing.T) {
	ids := []any{"a", "", "<&>\u2028é", float64(0), float64(-7), float64(123456789012345)}
	results := []*mcpsdk.CallToolResult{
		tooldef.Result(200, []byte(`{"data":{"a":"<b>&amp;</b>\u2028","n":[1,2.5e3,{"x":null}]}}`), ""),
		tooldef.Result(200, []byte(`{"errors":[{"message":"bad <i>x</i>","extensions":{"code":"BAD_USER_INPUT"},"path":["a",0]}]}`), ""),
		tooldef.Result(503, []byte(`{"error":"Service Unavailable"}`), "7"),
		toolError(`argument "id" must be a string`),
		{Meta: mcpsdk.Meta{"retryAfter": 3, "rateLimit": `"t";r=0;t=3`}, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "Rate limit exceeded"}}, IsError: true},
		{},
	}
	for _, raw := range ids {
		id, err := jsonrpc.MakeID(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range results {
			got, err := encodeCallAnswer(id, res, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			sdkRes := res
			if sdkRes.Content == nil {
				sdkRes = &mcpsdk.CallToolResult{Content: []mcpsdk.Content{}}
			}
			result, err := marshalUnescaped(sdkRes)
			if err != nil {
				t.Fatal(err)
			}
			want, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: result})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("id %v:\n got  %s\n want %s", raw, got, want)
			}
		}
		got, _ := encodeCallAnswer(id, nil, notEntitled("loans"), false)
		want, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: notEntitled("loans")})
		if !bytes.Equal(got, want) {
			t.Errorf("error, id %v:\n got  %s\n want %s", raw, got, want)
		}
	}
}
