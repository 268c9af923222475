package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/mcp/tooldef"
)

// Revision 2026-07-28 on /v1/mcp (modern.go, docs/design.md D80): served
// from each request alone, standard headers checked against the body.

// modernMeta is the _meta every modern request carries.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// modernHeaders are a modern POST's headers for method (and name, "" for
// none).
func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": versionModern, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// modernBody is a modern request: params holds the members besides _meta.
func modernBody(id, method, params string) string {
	if params != "" {
		params += ","
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params + modernMeta + `}}`
}

// modernResult is the result of an application/json answer, or fails.
func modernResult(t *testing.T, r reply) map[string]json.RawMessage {
	t.Helper()
	var msg struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &msg) != nil || msg.Result == nil {
		t.Fatalf("want a result, got %d %s", r.status, r.body)
	}
	if r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a modern answer carries Mcp-Session-Id %q", r.header.Get("Mcp-Session-Id"))
	}
	if got := string(msg.Result["resultType"]); got != `"complete"` {
		t.Errorf("resultType %s in %s", got, r.body)
	}
	var meta map[string]struct{ Name string }
	if json.Unmarshal(msg.Result["_meta"], &meta) != nil || meta[metaServerInfo].Name != "civicgate" {
		t.Errorf("no server identity in _meta: %s", r.body)
	}
	return msg.Result
}

func TestModernDiscoverListCall(t *testing.T) {
	g := newGateway(t)
	reader, partner := g.issue(t, "reader"), g.issue(t, "partner")
	g.start(t, gatewayConfig{})

	res := modernResult(t, g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(modernBody(`"d"`, methodDiscover, "")), modernHeaders(methodDiscover, "")))
	var versions []string
	_ = json.Unmarshal(res["supportedVersions"], &versions)
	if !slices.Equal(versions, allVersions) || string(res["cacheScope"]) != `"public"` || string(res["ttlMs"]) != "60000" {
		t.Errorf("server/discover: %v %s %s", versions, res["cacheScope"], res["ttlMs"])
	}

	for key, want := range map[string][]string{
		reader.Key:  {"get_book", "list_authors", "list_books"},
		partner.Key: {"get_book", "list_authors", "list_books", "member_loans"},
	} {
		res := modernResult(t, g.send(t, http.MethodPost, "/v1/mcp", key, []byte(modernBody("1", "tools/list", "")), modernHeaders("tools/list", "")))
		var tools []struct{ Name string }
		_ = json.Unmarshal(res["tools"], &tools)
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, want) || string(res["cacheScope"]) != `"private"` || string(res["ttlMs"]) != "60000" {
			t.Errorf("tools/list: %v %s %s, want %v private 60000", names, res["cacheScope"], res["ttlMs"], want)
		}
	}

	// The 2025 era's list is private too.
	sid := g.openRaw(t, reader.Key)
	if r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), mcpHeaders(sid)); !strings.Contains(r.body, `"cacheScope":"private"`) {
		t.Errorf("2025 tools/list: %s", r.body)
	}

	// A call equals its POST /v1/graphql; an Mcp-Session-Id is ignored; a
	// name may come Base64-encoded.
	want := g.graphql(t, reader.Key, readManifest(t)["GetBook"], map[string]any{"id": "b1"})
	for _, name := range []string{"get_book", "=?base64?Z2V0X2Jvb2s=?="} {
		h := modernHeaders("tools/call", name)
		h["Mcp-Session-Id"] = "not-a-session"
		res := modernResult(t, g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(modernBody("7", "tools/call", `"name":"get_book","arguments":{"id":"b1"}`)), h))
		if !jsonEqual(t, res["structuredContent"], want) {
			t.Errorf("%s: structuredContent %s, want %s", name, res["structuredContent"], want)
		}
	}
}

// The go-sdk's client at its default revision (2026-07-28) discovers, lists
// and calls without a session.
func TestModernGoClient(t *testing.T) {
	g := newGateway(t)
	partner := g.issue(t, "partner")
	g.start(t, gatewayConfig{})
	rec := &typeRecorder{}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcpsdk.StreamableClientTransport{
		Endpoint: g.base + "/v1/mcp", HTTPClient: &http.Client{Transport: rec.wrap(bearer{partner.Key})}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.ID() != "" {
		t.Errorf("a modern client got session %q", cs.ID())
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"get_book", "list_authors", "list_books", "member_loans"}) {
		t.Errorf("partner lists %v", got)
	}
	res, text := callText(t, cs, "get_book", map[string]any{"id": "b1"})
	if res.IsError || !strings.Contains(text, `"title":"Middlemarch"`) {
		t.Fatalf("get_book: %s", text)
	}
	if _, text := callText(t, cs, "get_book", map[string]any{"id": 7}); !strings.Contains(text, `argument "id" must be a string`) {
		t.Errorf("bad arguments: %s", text)
	}
}

func TestModernRefusals(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	call := modernBody("5", "tools/call", `"name":"get_book","arguments":{"id":"b1"}`)
	set := func(h map[string]string, k, v string) map[string]string {
		c := map[string]string{}
		for a, b := range h {
			c[a] = b
		}
		if v == "" {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	callHdr := modernHeaders("tools/call", "get_book")
	refusedBefore := g.scrape(t, `civicgate_mcp_refusals_total{reason="not_entitled"}`)
	for name, c := range map[string]struct {
		method, body string
		hdr          map[string]string
		status       int
		want         string
	}{
		"no Mcp-Method":          {"POST", modernBody("1", "tools/list", ""), set(modernHeaders("", ""), "Mcp-Method", ""), 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: missing required Mcp-Method header"}}`},
		"Mcp-Method not body's":  {"POST", call, modernHeaders("tools/list", ""), 400, `{"jsonrpc":"2.0","id":5,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Method header does not match the body's method"}}`},
		"Mcp-Method twice":       {"POST", call, set(callHdr, "Mcp-Method", "tools/call, tools/call"), 400, `"code":-32020,"message":"Header mismatch: the Mcp-Method header is malformed"`},
		"no Mcp-Name":            {"POST", call, set(callHdr, "Mcp-Name", ""), 400, `{"jsonrpc":"2.0","error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header is missing or malformed"}}`},
		"Mcp-Name not body's":    {"POST", call, set(callHdr, "Mcp-Name", "list_books"), 400, `{"jsonrpc":"2.0","id":5,"error":{"code":-32020,"message":"Header mismatch: the Mcp-Name header does not match the body's params.name"}}`},
		"bad Base64 name":        {"POST", call, set(callHdr, "Mcp-Name", "=?base64?***?="), 400, `"code":-32020`},
		"_meta another version":  {"POST", strings.Replace(call, `"2026-07-28"`, `"2025-11-25"`, 1), callHdr, 400, `{"jsonrpc":"2.0","id":5,"error":{"code":-32020,"message":"Header mismatch: the MCP-Protocol-Version header does not match _meta's io.modelcontextprotocol/protocolVersion"}}`},
		"no _meta":               {"POST", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_book"}}`, callHdr, 400, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"missing or invalid _meta field io.modelcontextprotocol/protocolVersion"}}`},
		"no capabilities":        {"POST", strings.Replace(call, `"io.modelcontextprotocol/clientCapabilities":{},`, "", 1), callHdr, 400, `"code":-32602,"message":"missing or invalid _meta field io.modelcontextprotocol/clientCapabilities"`},
		"2025 header, 2026 body": {"POST", modernBody("6", "tools/list", ""), mcpHeaders(g.initialize(t, reader.Key, nil)), 400, `{"jsonrpc":"2.0","id":6,"error":{"code":-32020,`},
		"unknown version":        {"POST", call, set(callHdr, "Mcp-Protocol-Version", "2027-01-01"), 400, `{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":"2027-01-01","supported":["2026-07-28","2025-11-25","2025-06-18"]}}}`},
		"ping":                   {"POST", modernBody("8", "ping", ""), modernHeaders("ping", ""), 404, `{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found: ping was removed in MCP 2026-07-28"}}`},
		"initialize":             {"POST", modernBody("8", "initialize", ""), modernHeaders("initialize", ""), 404, `"code":-32601,"message":"Method not found: initialize was removed in MCP 2026-07-28"`},
		"logging/setLevel":       {"POST", modernBody("8", "logging/setLevel", `"level":"info"`), modernHeaders("logging/setLevel", ""), 404, `"code":-32601`},
		"unknown method":         {"POST", modernBody("9", "tools/destroy", ""), modernHeaders("tools/destroy", ""), 404, `{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found"}}`},
		// No capability server/discover declares: refused, not answered empty by the SDK.
		"prompts/list":        {"POST", modernBody("10", "prompts/list", ""), modernHeaders("prompts/list", ""), 404, `{"jsonrpc":"2.0","id":10,"error":{"code":-32601,"message":"Method not found"}}`},
		"resources/list":      {"POST", modernBody("11", "resources/list", ""), modernHeaders("resources/list", ""), 404, `{"jsonrpc":"2.0","id":11,"error":{"code":-32601,"message":"Method not found"}}`},
		"completion/complete": {"POST", modernBody("12", "completion/complete", ""), modernHeaders("completion/complete", ""), 404, `"code":-32601`},
		"listen, _meta 2025":  {"POST", strings.Replace(modernBody("9", methodListen, ""), `"2026-07-28"`, `"2025-11-25"`, 1), modernHeaders(methodListen, ""), 400, `"code":-32020`},
		"GET":                 {"GET", "", modernHeaders("", ""), 405, `{"error":"Method Not Allowed"}`},
		"DELETE":              {"DELETE", "", modernHeaders("", ""), 405, `{"error":"Method Not Allowed"}`},
		"not entitled":        {"POST", modernBody("3", "tools/call", `"name":"member_loans"`), modernHeaders("tools/call", "member_loans"), 403, `{"jsonrpc":"2.0","error":{"code":-31030,"message":"Tier not entitled to this endpoint family","data":{"refusedFamily":"loans"}}}`},
		"unknown tool":        {"POST", modernBody("4", "tools/call", `"name":"nope"`), modernHeaders("tools/call", "nope"), 200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"unknown tool"}}`},
		"notification":        {"POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, modernHeaders("notifications/cancelled", ""), 202, ``},
	} {
		t.Run(name, func(t *testing.T) {
			r := g.send(t, c.method, "/v1/mcp", reader.Key, []byte(c.body), c.hdr)
			if r.status != c.status || !strings.Contains(r.body, c.want) {
				t.Errorf("%d %s, want %d with %s", r.status, r.body, c.status, c.want)
			}
		})
	}
	if n := g.scrape(t, `civicgate_mcp_refusals_total{reason="not_entitled"}`) - refusedBefore; n != 1 {
		t.Errorf("not_entitled refusals: %v more, want 1", n)
	}
}

// A call of a tool the tier lacks is refused from Mcp-Name: its body is
// never read (a body that fails the test if read), and the refusal counted.
func TestModernRefusedBeforeBody(t *testing.T) {
	c := startChain(t, 10)
	before := (&gateway{}).scrape(t, `civicgate_mcp_refusals_total{reason="not_entitled"}`)
	w := &recorder{h: http.Header{}}
	r := httptest.NewRequest(http.MethodPost, "/v1/mcp", unreadable{t})
	c.modern(r, c.readerKey, "tools/call", "member_loans")
	c.srv.ServeHTTP(w, r)
	if w.status != http.StatusForbidden || !strings.Contains(w.body.String(), `"code":-31030`) || w.h.Get("Civic-Refused-Family") != "loans" {
		t.Errorf("%d %v %s", w.status, w.h, w.body.String())
	}
	if after := (&gateway{}).scrape(t, `civicgate_mcp_refusals_total{reason="not_entitled"}`); after != before+1 {
		t.Errorf("not_entitled refusals %v → %v", before, after)
	}
}

// unreadable is a body no one may read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the body was read")
	return 0, http.ErrBodyReadAfterClose
}

// A tools/call civic_mcp answers in 2026-07-28 has the bytes the go-sdk's
// stateless server writes for the same result.
func TestModernAnswerIsTheSDKs(t *testing.T) {
	impl := &mcpsdk.Implementation{Name: "civicgate", Title: "civicgate", Version: "v1.2.3"}
	results := []*mcpsdk.CallToolResult{
		tooldef.Result(200, []byte(`{"data":{"a":"<b>&amp;</b>\u2028","n":[1,2.5e3,{"x":null}]}}`), ""),
		tooldef.Result(503, []byte(`{"error":"Service Unavailable"}`), "7"),
		toolError(`argument "id" must be a string`),
		{Meta: mcpsdk.Meta{"retryAfter": 3, "rateLimit": `"t";r=0;t=3`}, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "Rate limit exceeded"}}, IsError: true},
	}
	for i, res := range results {
		srv := mcpsdk.NewServer(impl, nil)
		srv.AddTool(&mcpsdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
				c := *res
				if res.Meta != nil {
					c.Meta = mcpsdk.Meta{}
					for k, v := range res.Meta {
						c.Meta[k] = v
					}
				}
				return &c, nil
			})
		sdk := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
			&mcpsdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
		for _, id := range []string{`"x<&>"`, `12`} {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(modernBody(id, "tools/call", `"name":"t"`)))
			for k, v := range modernHeaders("tools/call", "t") {
				r.Header.Set(k, v)
			}
			want := httptest.NewRecorder()
			sdk.ServeHTTP(want, r)
			var raw any
			_ = json.Unmarshal([]byte(id), &raw)
			rid, _ := jsonrpc.MakeID(raw)
			got := httptest.NewRecorder()
			writeModernAnswer(got, http.StatusOK, rid, res, nil, impl)
			if !bytes.Equal(bytes.TrimSpace(got.Body.Bytes()), bytes.TrimSpace(want.Body.Bytes())) {
				t.Errorf("result %d, id %s:\n civic_mcp %s\n SDK       %s", i, id, got.Body, want.Body)
			}
		}
	}
}

// subscriptions/listen: acknowledged, told of a tier change (seen on the
// key's next request), bounded per key, and ended by a revocation (awaited,
// the latency logged: docs/design.md D22 says within 2 s).
func TestModernListen(t *testing.T) {
	g := newGateway(t)
	key := g.issue(t, "reader")
	g.start(t, gatewayConfig{mcpOptions: "max_sessions_per_key 2"})
	listen := modernBody(`"L1"`, methodListen, `"notifications":{"toolsListChanged":true}`)
	open := func() (*http.Response, *bufio.Scanner) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.base+"/v1/mcp", strings.NewReader(listen))
		req.Header.Set("Authorization", "Bearer "+key.Key)
		for k, v := range modernHeaders(methodListen, "") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp, bufio.NewScanner(resp.Body)
	}
	next := func(sc *bufio.Scanner) string {
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return d
			}
		}
		return ""
	}
	resp, sc := open()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen: %d %v", resp.StatusCode, resp.Header)
	}
	if ack := next(sc); ack != `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"},"notifications":{"toolsListChanged":true}}}` {
		t.Fatalf("acknowledgement %s", ack)
	}
	if r2, _ := open(); r2.StatusCode != http.StatusOK {
		t.Fatalf("second listen: %d", r2.StatusCode)
	}
	if r3, _ := open(); r3.StatusCode != http.StatusTooManyRequests {
		t.Errorf("third listen over max_sessions_per_key 2: %d", r3.StatusCode)
	}
	// The tier changes; the key's next request (any instance, here this
	// one, once civic_auth has read the keys file) tells the stream.
	g.setTier(t, key.ID, "partner")
	for deadline := time.Now().Add(30 * time.Second); ; {
		// A call of the new family's tool: refused from its header (no
		// message rate spent) until the tier has changed.
		r := g.send(t, http.MethodPost, "/v1/mcp", key.Key, []byte(modernBody("2", "tools/call", `"name":"member_loans","arguments":{"member":"m1"}`)), modernHeaders("tools/call", "member_loans"))
		if r.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tier change never reached the gateway: %d %s", r.status, r.body)
		}
	}
	if n := next(sc); n != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}` {
		t.Fatalf("after the tier change: %s", n)
	}
	ended := make(chan time.Time, 1)
	go func() {
		for sc.Scan() {
		}
		ended <- time.Now()
	}()
	revoked := time.Now()
	if _, err := keystore.RevokeFile(g.keysFile, key.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-ended:
		t.Logf("the listen stream ended %s after the revocation was written", at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the listen stream still open 30 s after the revocation")
	}
}
