package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// A tools/call civic_mcp answers itself (fastcall.go) and the same message
// answered by the SDK (sdkAnswersCalls) give byte-identical JSON-RPC
// responses and the same HTTP status: results, tool errors, JSON-RPC
// errors, ids of every form; what is not plain goes to the SDK on both.
// The only difference is the framing: the fast path answers
// application/json, the SDK text/event-stream.

// diffCall is one message of the differential tests.
type diffCall struct {
	name string
	body string
	fast bool // civic_mcp answers it (else the SDK, on both passes)
}

// callBody is a tools/call of tool with the raw arguments member ("" for
// none) and id.
func callBody(id, tool, args string) string {
	params := `{"name":"` + tool + `"`
	if args != "" {
		params += `,"arguments":` + args
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}}`
}

// rpcObject is the JSON-RPC message of an answer: the body, or the data of
// its one SSE event.
func rpcObject(t *testing.T, r reply) string {
	t.Helper()
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		return r.body
	}
	var data []string
	for _, line := range strings.Split(r.body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) != 1 {
		t.Fatalf("an SSE answer with %d events: %q", len(data), r.body)
	}
	return data[0]
}

// openRaw initializes a session with raw POSTs and returns its id.
func (g *gateway) openRaw(t *testing.T, key string) string {
	t.Helper()
	sid := g.initialize(t, key, nil)
	if r := g.send(t, http.MethodPost, "/v1/mcp", key, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), mcpHeaders(sid)); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return sid
}

// compareCalls sends each call through the fast path, then through the
// SDK, in one session, and compares the answers (norm, if not nil, is
// applied to both JSON-RPC objects first).
func (g *gateway) compareCalls(t *testing.T, key, sid string, calls []diffCall, norm func(string) string) {
	t.Helper()
	defer sdkAnswersCalls.Store(false)
	for _, c := range calls {
		sdkAnswersCalls.Store(false)
		fast := g.send(t, http.MethodPost, "/v1/mcp", key, []byte(c.body), mcpHeaders(sid))
		sdkAnswersCalls.Store(true)
		sdk := g.send(t, http.MethodPost, "/v1/mcp", key, []byte(c.body), mcpHeaders(sid))
		a, b := rpcObject(t, fast), rpcObject(t, sdk)
		if norm != nil {
			a, b = norm(a), norm(b)
		}
		if fast.status != sdk.status || a != b {
			t.Errorf("%s:\n civic_mcp %d %s\n SDK       %d %s", c.name, fast.status, a, sdk.status, b)
		}
		ct := fast.header.Get("Content-Type")
		if c.fast != (ct == "application/json" && fast.status == http.StatusOK) {
			t.Errorf("%s: answered %d %q, want civic_mcp to answer it: %v", c.name, fast.status, ct, c.fast)
		}
		if c.fast && fast.header.Get("Cache-Control") != "no-cache, no-transform" {
			t.Errorf("%s: Cache-Control %q", c.name, fast.header.Get("Cache-Control"))
		}
		t.Logf("%s: %d %s", c.name, fast.status, a)
	}
}

func TestFastCallEqualsSDK(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	sid := g.openRaw(t, reader.Key)
	nested := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	g.compareCalls(t, reader.Key, sid, []diffCall{
		{"ok", callBody("1", "get_book", `{"id":"b1"}`), true},
		{"ok, a list", callBody("2", "list_authors", `{"first":2}`), true},
		{"ok, null", callBody("3", "get_book", `{"id":"nope"}`), true},
		{"ok, Int as 2.0", callBody("4", "list_authors", `{"first":2.0}`), true},
		{"markup and U+2028 in the answer", callBody("5", "get_book", `{"id":"upstream-markup"}`), true},
		{"GraphQL errors", callBody("6", "get_book", `{"id":"upstream-errors"}`), true},
		{"upstream HTML 500", callBody("7", "get_book", `{"id":"upstream-500"}`), true},
		{"bad argument type", callBody("8", "get_book", `{"id":7}`), true},
		{"argument missing", callBody("9", "get_book", `{}`), true},
		{"unknown argument", callBody("10", "get_book", `{"id":"b1","limit":3}`), true},
		{"arguments an array", callBody("11", "get_book", `[1]`), true},
		{"arguments a string", callBody("12", "get_book", `"b1"`), true},
		{"arguments null", callBody("13", "get_book", `null`), true},
		{"no arguments", callBody("14", "get_book", ``), true},
		{"arguments nested", callBody("15", "get_book", `{"id":`+strings.Repeat("[", 60)+strings.Repeat("]", 60)+`}`), true},
		{"not entitled", callBody("16", "member_loans", `{"memberId":"m1"}`), true},
		{"string id with markup", callBody(`"call <1> & 2"`, "get_book", `{"id":"b1"}`), true},
		{"string id with U+2028", callBody("\"a\u2028b\u00e9\"", "get_book", `{"id":"b1"}`), true},
		{"empty string id", callBody(`""`, "get_book", `{"id":"b1"}`), true},
		{"id 0", callBody("0", "get_book", `{"id":"b1"}`), true},
		{"id -0", callBody("-0", "get_book", `{"id":"b1"}`), true},
		{"id of 15 digits", callBody("-999999999999999", "get_book", `{"id":"b1"}`), true},
		{"id twice: refused on both (docs/design.md D65)", `{"jsonrpc":"2.0","id":17,"id":"x","method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"}}}`, false},
		{"arguments twice", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"get_book","arguments":{"id":1},"arguments":{"id":"b1"}}}`, true},
		{"members reordered, spaced", "{ \"params\" : { \"arguments\" : {\"id\":\"b2\"} , \"name\" : \"get_book\" } ,\n\"method\":\"tools/call\", \"id\" : 19 , \"jsonrpc\" : \"2.0\" }", true},

		// The SDK's, on both passes.
		{"unknown tool", callBody("30", "drop_tables", `{}`), false},
		{"progress token", `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"_meta":{"progressToken":"p1"},"name":"get_book","arguments":{"id":"b1"}}}`, false},
		{"another params member", `{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"},"requestState":"s"}}`, false},
		{"escaped name", callBody("33", `get\u005fbook`, `{"id":"b1"}`), false},
		{"escaped string id", callBody(`"\u0041"`, "get_book", `{"id":"b1"}`), false},
		{"id 1.5", callBody("1.5", "get_book", `{"id":"b1"}`), false},
		{"id 1e2", callBody("1e2", "get_book", `{"id":"b1"}`), false},
		{"id of 16 digits", callBody("1234567890123456", "get_book", `{"id":"b1"}`), false},
		{"id null", callBody("null", "get_book", `{"id":"b1"}`), false},
		{"no id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"}}}`, false},
		{"Params", `{"jsonrpc":"2.0","id":34,"method":"tools/call","Params":{"name":"get_book","arguments":{"id":"b1"}}}`, false},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":35,"method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"}}}`, false},
		{"params an array", `{"jsonrpc":"2.0","id":36,"method":"tools/call","params":["get_book"]}`, false},
		{"no name", callBody("37", "", `{"id":"b1"}`), false},
		{"nested past the SDK's bound", callBody("38", "get_book", `{"id":`+nested+`}`), false},
		{"an extra member", `{"jsonrpc":"2.0","id":39,"method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"}},"x":1}`, false},
	}, nil)
}

// A call the chain refuses: the guard's 403 for a family (civic_mcp's
// families differ from the guard's), and the rate limit's 429 with its
// _meta. Retry-After and RateLimit's t= count down between the two
// passes: they are the only part normalized.
func TestFastCallRefusalsEqualSDK(t *testing.T) {
	g := newGateway(t)
	reader, tiny := g.issue(t, "reader"), g.issue(t, "tiny")
	g.start(t, gatewayConfig{mcpFamily: "family catalog books book authors loans"})
	g.compareCalls(t, reader.Key, g.openRaw(t, reader.Key), []diffCall{
		{"the guard's 403", callBody("1", "member_loans", `{"memberId":"m1"}`), true},
	}, nil)
	sid := g.openRaw(t, tiny.Key) // 3 calls a minute
	for i := range 3 {
		if r := g.send(t, http.MethodPost, "/v1/mcp", tiny.Key, []byte(callBody("1", "get_book", `{"id":"b1"}`)), mcpHeaders(sid)); strings.Contains(r.body, `"isError":true`) {
			t.Fatalf("call %d: %s", i+1, r.body)
		}
	}
	seconds := regexp.MustCompile(`(t=|retry after |"retryAfter":)\d+`)
	g.compareCalls(t, tiny.Key, sid, []diffCall{
		{"the rate limit's 429", callBody("2", "get_book", `{"id":"b1"}`), true},
	}, func(s string) string { return seconds.ReplaceAllString(s, "${1}N") })
}

// A call in progress is canceled on both paths by notifications/cancelled
// naming its id, and by the end of its session: the GraphQL request is
// canceled, and a canceled call answers the same.
func TestFastCallCanceled(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	defer sdkAnswersCalls.Store(false)
	slow := callBody(`"slow-1"`, "get_book", `{"id":"upstream-slow"}`)
	cancel := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"test"}}`)
	var answers []string
	for _, sdk := range []bool{false, true} {
		sdkAnswersCalls.Store(sdk)
		sid := g.openRaw(t, reader.Key)
		before := g.up.canceled.Load()
		answered := make(chan reply, 1)
		go func() { answered <- g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(slow), mcpHeaders(sid)) }()
		testenv.EventuallyTrue(t, 20*time.Second, "the slow request reached the upstream", func() bool { return g.up.waiting.Load() == 1 })
		if r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, cancel, mcpHeaders(sid)); r.status != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %d %s", r.status, r.body)
		}
		r := <-answered
		answers = append(answers, rpcObject(t, r))
		testenv.EventuallyTrue(t, 20*time.Second, "the upstream request was canceled", func() bool { return g.up.canceled.Load() == before+1 })

		// The session ends (DELETE) while a call runs: its request is canceled.
		before = g.up.canceled.Load()
		go func() { answered <- g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(slow), mcpHeaders(sid)) }()
		testenv.EventuallyTrue(t, 20*time.Second, "the slow request reached the upstream", func() bool { return g.up.waiting.Load() == 1 })
		if r := g.send(t, http.MethodDelete, "/v1/mcp", reader.Key, nil, map[string]string{"Mcp-Session-Id": sid}); r.status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", r.status, r.body)
		}
		r = <-answered
		testenv.EventuallyTrue(t, 20*time.Second, "the session's end canceled the upstream request", func() bool { return g.up.canceled.Load() == before+1 })
		t.Logf("sdk %v: the call when its session ended: %d %q", sdk, r.status, r.body)
	}
	want := `{"jsonrpc":"2.0","id":"slow-1","result":{"content":[{"type":"text","text":"The call was canceled."}],"isError":true}}`
	if answers[0] != want || answers[1] != want {
		t.Errorf("canceled calls answered\n civic_mcp %s\n SDK       %s\nwant %s", answers[0], answers[1], want)
	}
}

// Two calls with one id in flight in a session: the later is refused as
// the SDK refuses it.
func TestFastCallDuplicateID(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	defer sdkAnswersCalls.Store(false)
	slow := []byte(callBody("7", "get_book", `{"id":"upstream-slow"}`))
	var answers []reply
	for _, sdk := range []bool{false, true} {
		sdkAnswersCalls.Store(sdk)
		sid := g.openRaw(t, reader.Key)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the first call, held by the upstream until its client gives up
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/v1/mcp", strings.NewReader(string(slow)))
			for k, v := range mcpHeaders(sid) {
				req.Header.Set(k, v)
			}
			req.Header.Set("Authorization", "Bearer "+reader.Key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		testenv.EventuallyTrue(t, 20*time.Second, "the first call reached the upstream", func() bool { return g.up.waiting.Load() == 1 })
		answers = append(answers, g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(callBody("7", "get_book", `{"id":"b1"}`)), mcpHeaders(sid)))
		cancel()
		wg.Wait()
		testenv.EventuallyTrue(t, 20*time.Second, "the first call ended", func() bool { return g.up.waiting.Load() == 0 })
	}
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"duplicate in-flight request ID 7"}}`
	for i, r := range answers {
		if r.status != http.StatusBadRequest || r.body != want || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("pass %d: %d %q %s, want 400 %s", i, r.status, r.header.Get("Content-Type"), r.body, want)
		}
	}
}

// The go-sdk's client gets its calls answered by civic_mcp: it sends
// plain tools/call messages, and reads an application/json answer.
func TestGoClientCallsAreAnsweredByCivicMCP(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	rec := &typeRecorder{}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcpsdk.StreamableClientTransport{
		Endpoint: g.base + "/v1/mcp", HTTPClient: &http.Client{Transport: rec.wrap(bearer{reader.Key})}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, &mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, text := callText(t, cs, "get_book", map[string]any{"id": "b1"})
	if res.IsError || !strings.Contains(text, `"title":"Middlemarch"`) {
		t.Fatalf("get_book: %s", text)
	}
	if got := rec.last(); got != "application/json" {
		t.Errorf("the call was answered %q, want application/json (civic_mcp)", got)
	}
	var sc map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &sc); err != nil || sc["book"] == nil {
		t.Errorf("structuredContent %s", raw)
	}
}

// typeRecorder remembers the Content-Type of the last answer to a POST.
type typeRecorder struct {
	mu sync.Mutex
	ct string
}

type recordingTransport struct {
	rec  *typeRecorder
	next http.RoundTripper
}

func (r *typeRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return recordingTransport{r, next}
}

func (r *typeRecorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ct
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		t.rec.mu.Lock()
		t.rec.ct = resp.Header.Get("Content-Type")
		t.rec.mu.Unlock()
	}
	return resp, err
}
