package mcp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// rpcErrorAnswer is a JSON-RPC error response with its data.
type rpcErrorAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			RetryAfter      int    `json:"retryAfter"`
			RateLimit       string `json:"rateLimit"`
			RateLimitPolicy string `json:"rateLimitPolicy"`
		} `json:"data"`
	} `json:"error"`
}

// checkMessageRefused checks r is the message rate's refusal of the
// message with id (raw JSON) under a rate of quota per minute.
func checkMessageRefused(t *testing.T, what string, r reply, id string, quota int) {
	t.Helper()
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("%s: %d %s, want 429", what, r.status, r.body)
	}
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 {
		t.Errorf("%s: Retry-After %q", what, r.header.Get("Retry-After"))
	}
	policy := `"mcp_messages";q=` + strconv.Itoa(quota) + `;w=60`
	limit := `"mcp_messages";r=0;t=` + strconv.Itoa(retry)
	if r.header.Get("RateLimit-Policy") != policy || r.header.Get("RateLimit") != limit {
		t.Errorf("%s: RateLimit-Policy %q, RateLimit %q; want %q, %q", what, r.header.Get("RateLimit-Policy"), r.header.Get("RateLimit"), policy, limit)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	var e rpcErrorAnswer
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("%s: %v: %s", what, err, r.body)
	}
	want := "Rate limit exceeded (HTTP 429; retry after " + strconv.Itoa(retry) + " s)"
	if e.JSONRPC != "2.0" || string(e.ID) != id || e.Error.Code != codeRateLimited || e.Error.Message != want ||
		e.Error.Data.RetryAfter != retry || e.Error.Data.RateLimit != limit || e.Error.Data.RateLimitPolicy != policy {
		t.Errorf("%s: %s\nwant id %s, code %d, %q and the headers in data", what, r.body, id, codeRateLimited, want)
	}
}

// Every message but a tools/call request takes one unit of the key's
// message rate; the next one over it is refused with the rate-limited
// shape (429, Retry-After, RateLimit headers, the words and _meta of a
// rate-limited tool call as a JSON-RPC error), whatever its method; tool
// calls are neither counted by it nor refused by it; another key has its
// own.
func TestMessageRate(t *testing.T) {
	g := newGateway(t)
	reader, other := g.issue(t, "reader"), g.issue(t, "reader")
	g.start(t, gatewayConfig{mcpOptions: "message_rate 5/m"})
	sid := g.openRaw(t, reader.Key) // initialize, notifications/initialized: 2
	post := func(body string) reply {
		return g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(body), mcpHeaders(sid))
	}
	if r := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.status != http.StatusOK { // 3
		t.Fatalf("tools/list: %d %s", r.status, r.body)
	}
	callOK := func(what, body string) {
		t.Helper()
		before := g.up.calls.Load()
		r := post(body)
		if r.status != http.StatusOK || !strings.Contains(rpcObject(t, r), `"structuredContent":{"book":{"id":"b1"`) || g.up.calls.Load() != before+1 {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
	}
	for i := range 8 { // more calls than the message rate holds
		callOK("a plain call", callBody(strconv.Itoa(100+i), "get_book", `{"id":"b1"}`))
	}
	callOK("a call the SDK answers", `{"jsonrpc":"2.0","id":200,"method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"},"_meta":{"progressToken":"p"}}}`)
	for i := range 2 { // 4, 5
		if r := post(`{"jsonrpc":"2.0","id":` + strconv.Itoa(300+i) + `,"method":"ping"}`); r.status != http.StatusOK || !strings.Contains(rpcObject(t, r), `"result":{}`) {
			t.Fatalf("ping %d: %d %s", 4+i, r.status, r.body)
		}
	}
	checkMessageRefused(t, "the 6th message, a ping", post(`{"jsonrpc":"2.0","id":"six","method":"ping"}`), `"six"`, 5)
	checkMessageRefused(t, "a notification", post(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`), `null`, 5)
	checkMessageRefused(t, "tools/list", post(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`), `7`, 5)
	checkMessageRefused(t, "a method no server answers", post(`{"jsonrpc":"2.0","id":8,"method":"sampling/createMessage"}`), `8`, 5)
	checkMessageRefused(t, "a tools/call without an id", post(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_book"}}`), `null`, 5)
	r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(initializeBody), mcpHeaders(""))
	checkMessageRefused(t, "initialize", r, `1`, 5)
	callOK("a call over the message rate", callBody("400", "get_book", `{"id":"b1"}`))

	// Another key: a bucket of its own.
	g.openRaw(t, other.Key)

	if n := g.scrape(t, `civicgate_mcp_refusals_total{reason="message_rate"}`); n != 6 {
		t.Errorf("civicgate_mcp_refusals_total{reason=\"message_rate\"} = %v, want 6", n)
	}
}

// Without message_rate a key has 600 messages a minute (docs/mcp.md): the
// 601st is refused.
func TestMessageRateDefault(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	sid := g.openRaw(t, reader.Key) // 2
	for i := 3; i <= 600; i++ {
		if r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`), mcpHeaders(sid)); r.status != http.StatusAccepted {
			t.Fatalf("message %d: %d %s", i, r.status, r.body)
		}
	}
	r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(`{"jsonrpc":"2.0","id":601,"method":"ping"}`), mcpHeaders(sid))
	checkMessageRefused(t, "the 601st message", r, `601`, 600)
}
