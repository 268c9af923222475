package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sdkMethod is the method the SDK's own decoder reads in body: a request's
// method, "" for a response, ok false when it decodes no message.
func sdkMethod(body []byte) (method string, ok bool) {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return "", false
	}
	if req, isReq := msg.(*jsonrpc.Request); isReq {
		return req.Method, true
	}
	return "", true
}

// spelled is a message with the members between jsonrpc and params written
// as given, its params those of a call of get_book.
func spelled(members string) string {
	return `{"jsonrpc":"2.0",` + members + `,"params":{"name":"get_book","arguments":{"id":"b1"}}}`
}

// methodSpellings are messages whose method (or id) is written in every way
// the decoders might read differently, with what the router decides:
// "refused" (400, -32600), or the method it routes by.
var methodSpellings = []struct {
	name, body, router string
}{
	{"exact", spelled(`"id":1,"method":"tools/call"`), "tools/call"},
	{"Method", spelled(`"id":1,"Method":"tools/call"`), "refused"},
	{"METHOD", spelled(`"id":1,"METHOD":"tools/call"`), "refused"},
	{"mEthod", spelled(`"id":1,"mEthod":"ping"`), "refused"},
	{"escaped name", spelled(`"id":1,"\u006dethod":"tools/call"`), "refused"},
	{"escaped name, all of it", spelled(`"id":1,"\u006d\u0065\u0074\u0068\u006f\u0064":"ping"`), "refused"},
	{"twice, call last", spelled(`"id":1,"method":"ping","method":"tools/call"`), "refused"},
	{"twice, call first", spelled(`"id":1,"method":"tools/call","method":"ping"`), "refused"},
	{"twice, the same", spelled(`"id":1,"method":"tools/call","method":"tools/call"`), "refused"},
	{"method and Method", spelled(`"id":1,"method":"ping","Method":"tools/call"`), "refused"},
	{"Method and method", spelled(`"id":1,"Method":"tools/call","method":"ping"`), "refused"},
	{"id and ID", spelled(`"id":1,"ID":2,"method":"ping"`), "refused"},
	{"id twice", spelled(`"id":1,"id":2,"method":"ping"`), "refused"},
	{"escaped id", spelled(`"\u0069d":1,"method":"ping"`), "refused"},
	{"escaped value", spelled(`"id":1,"method":"tools\/call"`), "tools/call"},
	{"escaped value, ping", spelled(`"id":1,"method":"\u0070ing"`), "ping"},
	{"a name with a space", spelled(`"id":1,"method ":"tools/call"`), ""},
	{"a Cyrillic e", spelled(`"id":1,"m` + "\u0435" + `thod":"tools/call"`), ""},
	{"method in params only", `{"jsonrpc":"2.0","id":1,"params":{"method":"tools/call","Method":"x"}}`, ""},
	{"method of a nested object", `{"jsonrpc":"2.0","id":1,"x":{"method":"ping"},"method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"}}}`, "tools/call"},
	{"ping", spelled(`"id":1,"method":"ping"`), "ping"},
}

// The router reads a message's method exactly as the SDK's decoder does,
// or refuses the message: never one method routed and another served.
func TestReadHeadAgreesWithSDK(t *testing.T) {
	for _, c := range methodSpellings {
		head, err := readHead([]byte(c.body))
		got := head.Method
		if errors.Is(err, errAmbiguousMember) {
			got = "refused"
		} else if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.router {
			t.Errorf("%s: the router reads %q, want %q", c.name, got, c.router)
		}
		if sdk, ok := sdkMethod([]byte(c.body)); err == nil && (!ok || sdk != head.Method) {
			t.Errorf("%s: the router reads %q, the SDK %q (decoded: %v)", c.name, head.Method, sdk, ok)
		}
	}
}

// FuzzReadHead: whatever message the router takes, the SDK's decoder reads
// the same method in it.
func FuzzReadHead(f *testing.F) {
	for _, c := range methodSpellings {
		f.Add([]byte(c.body))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"method":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		head, err := readHead(body)
		if err != nil {
			return
		}
		sdk, ok := sdkMethod(body)
		if ok && sdk != head.Method {
			t.Fatalf("%q: the router reads method %q, the SDK %q", body, head.Method, sdk)
		}
	})
}

// Through the real SDK server: each spelling is refused by civic_mcp, or
// served as the method the router routed it by — a tools/call runs the tool
// (one GraphQL request upstream), a ping answers {} — never one method
// routed and another served.
func TestRouterMethodEqualsSDK(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	sid := g.openRaw(t, reader.Key)
	for _, c := range methodSpellings {
		for _, sdkAnswers := range []bool{false, true} {
			sdkAnswersCalls.Store(sdkAnswers)
			before := g.up.calls.Load()
			r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(c.body), mcpHeaders(sid))
			ran := g.up.calls.Load() - before
			served := "other"
			switch {
			case r.status == http.StatusBadRequest && strings.Contains(r.body, `"code":-32600`):
				served = "refused"
			case r.status == http.StatusOK && strings.Contains(rpcObject(t, r), `"result":{"content":`) && ran == 1:
				served = "tools/call"
			case r.status == http.StatusOK && strings.Contains(rpcObject(t, r), `"result":{}`) && ran == 0:
				served = "ping"
			}
			want := c.router
			if want == "" {
				want = "other"
			}
			if served != want {
				t.Errorf("%s (SDK answers calls: %v): routed as %q, served as %q (%d upstream requests): %d %s",
					c.name, sdkAnswers, c.router, served, ran, r.status, r.body)
			}
		}
	}
	sdkAnswersCalls.Store(false)
}

// BenchmarkReadHead: the router's head read of a plain tools/call, the
// member scan of D65 included (BenchmarkReadHeadUnchecked: without it).
func BenchmarkReadHead(b *testing.B) {
	body := []byte(callBody("17", "list_authors", `{"first":2,"after":"YXJyYXljb25uZWN0aW9uOjE="}`))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readHead(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadHeadUnchecked(b *testing.B) {
	body := []byte(callBody("17", "list_authors", `{"first":2,"after":"YXJyYXljb25uZWN0aW9uOjE="}`))
	b.ReportAllocs()
	for b.Loop() {
		var head rpcHead
		if nestedDeeper(body, maxNesting) || json.Unmarshal(body, &head) != nil {
			b.Fatal("not a message")
		}
	}
}
