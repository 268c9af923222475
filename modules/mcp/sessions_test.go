package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// A session belongs to the key that opened it: another key naming it —
// on POST, GET or DELETE — is told it does not exist, before the SDK sees
// the request; the owner's session is untouched.
func TestSessionOfAnotherKeyIsNotFound(t *testing.T) {
	g := newGateway(t)
	a, b := g.issue(t, "partner"), g.issue(t, "partner")
	g.start(t, gatewayConfig{})
	sid := g.initialize(t, a.Key, nil)
	list := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	r := g.send(t, http.MethodPost, "/v1/mcp", b.Key, list, mcpHeaders(sid))
	if r.status != http.StatusNotFound || r.body != `{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Session not found"}}` {
		t.Errorf("POST with another key's session: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	get := map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}
	if r := g.send(t, http.MethodGet, "/v1/mcp", b.Key, nil, get); r.status != http.StatusNotFound || !strings.Contains(r.body, `"code":-32001`) {
		t.Errorf("GET with another key's session: %d %s", r.status, r.body)
	}
	if r := g.send(t, http.MethodDelete, "/v1/mcp", b.Key, nil, map[string]string{"Mcp-Session-Id": sid}); r.status != http.StatusNotFound {
		t.Errorf("DELETE with another key's session: %d %s", r.status, r.body)
	}
	// A session id never issued is as unknown.
	if r := g.send(t, http.MethodPost, "/v1/mcp", a.Key, list, mcpHeaders("NOSUCHSESSION")); r.status != http.StatusNotFound {
		t.Errorf("an unknown session: %d %s", r.status, r.body)
	}
	// The owner still uses it.
	g.send(t, http.MethodPost, "/v1/mcp", a.Key, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), mcpHeaders(sid))
	if r := g.send(t, http.MethodPost, "/v1/mcp", a.Key, list, mcpHeaders(sid)); r.status != http.StatusOK || !strings.Contains(r.body, `"member_loans"`) {
		t.Errorf("the owner's tools/list: %d %s", r.status, r.body)
	}
	if r := g.send(t, http.MethodDelete, "/v1/mcp", a.Key, nil, map[string]string{"Mcp-Session-Id": sid}); r.status != http.StatusNoContent {
		t.Errorf("the owner's DELETE: %d %s", r.status, r.body)
	}
	if r := g.send(t, http.MethodPost, "/v1/mcp", a.Key, list, mcpHeaders(sid)); r.status != http.StatusNotFound {
		t.Errorf("after DELETE: %d %s", r.status, r.body)
	}
}

// max_sessions_per_key: the key's next initialize is 429 with a JSON-RPC
// error and Retry-After; another key is not affected; a DELETE frees a
// slot. max_sessions: the gateway's next is 503.
func TestSessionCaps(t *testing.T) {
	g := newGateway(t)
	a, b, c := g.issue(t, "reader"), g.issue(t, "reader"), g.issue(t, "reader")
	g.start(t, gatewayConfig{mcpOptions: "max_sessions_per_key 2\n\t\t\tmax_sessions 3\n\t\t\tsession_idle_timeout 90s"})
	first := g.initialize(t, a.Key, nil)
	g.initialize(t, a.Key, nil)
	r := g.send(t, http.MethodPost, "/v1/mcp", a.Key, []byte(initializeBody), mcpHeaders(""))
	if r.status != http.StatusTooManyRequests || !strings.HasPrefix(r.body, `{"jsonrpc":"2.0","id":1,"error":{"code":-32031,"message":"Too many open MCP sessions for this key`) {
		t.Fatalf("a third session of one key: %d %s", r.status, r.body)
	}
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 90 {
		t.Errorf("Retry-After %q, want 1..90 (the idle timeout)", r.header.Get("Retry-After"))
	}
	g.initialize(t, b.Key, nil)
	r = g.send(t, http.MethodPost, "/v1/mcp", c.Key, []byte(initializeBody), mcpHeaders(""))
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"code":-32031`) || r.header.Get("Retry-After") == "" {
		t.Fatalf("a fourth session on the gateway: %d %s", r.status, r.body)
	}
	if r := g.send(t, http.MethodDelete, "/v1/mcp", a.Key, nil, map[string]string{"Mcp-Session-Id": first}); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	g.initialize(t, c.Key, nil)
	if n := g.scrape(t, `civicgate_mcp_refusals_total{reason="key_sessions"}`); n < 1 {
		t.Errorf("key_sessions refusals %v", n)
	}
}

// Browsers' requests carry Origin: one not in allowed_origins is refused
// (DNS rebinding, docs/mcp.md), one in it and none at all are let in.
func TestOrigin(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(initializeBody), map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Origin": "https://evil.example"})
	if r.status != http.StatusForbidden || r.body != `{"error":"Origin not allowed"}` || r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a foreign origin: %d %s", r.status, r.body)
	}
	g.initialize(t, reader.Key, map[string]string{"Origin": "https://AGENT.example"})
	g.initialize(t, reader.Key, nil)
}

// What civic_mcp answers itself, each with a JSON body: no caller, a
// method, a batch, a body over max_message, no session id, a protocol
// version not served, a Content-Type or Accept the transport refuses.
func TestRefusalsAreJSON(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{mcpOptions: "max_message 2KiB"})
	sid := g.initialize(t, reader.Key, nil)
	with := func(base map[string]string, k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range base {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 3000) + `"}}`
	for name, c := range map[string]struct {
		method, key, body string
		hdr               map[string]string
		status            int
		want              string
	}{
		"no key":          {"POST", "", initializeBody, mcpHeaders(""), 401, `{"error":"Missing bearer token"}`},
		"PUT":             {"PUT", reader.Key, "", nil, 405, `{"error":"Method Not Allowed"}`},
		"batch":           {"POST", reader.Key, `[` + initializeBody + `]`, mcpHeaders(""), 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not accepted (MCP 2025-06-18 and later)"}}`},
		"too large":       {"POST", reader.Key, big, mcpHeaders(sid), 413, `{"errors":[{"message":"Request body too large"}]}`},
		"not JSON":        {"POST", reader.Key, `{"jsonrpc":`, mcpHeaders(sid), 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"The request body is not a JSON-RPC message"}}`},
		"no session":      {"POST", reader.Key, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, mcpHeaders(""), 400, `{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Mcp-Session-Id header is required: send initialize first"}}`},
		"version":         {"POST", reader.Key, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, with(mcpHeaders(sid), "Mcp-Protocol-Version", "2024-11-05"), 400, `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":"2024-11-05","supported":["2026-07-28","2025-11-25","2025-06-18"]}}}`},
		"content type":    {"POST", reader.Key, initializeBody, with(mcpHeaders(""), "Content-Type", "text/plain"), 415, `"message":"Content-Type must be application/json"`},
		"accept":          {"POST", reader.Key, initializeBody, with(mcpHeaders(""), "Accept", "application/json"), 406, `"message":"Accept must list application/json and text/event-stream"`},
		"GET no session":  {"GET", reader.Key, "", map[string]string{"Accept": "text/event-stream"}, 400, `"message":"Mcp-Session-Id header is required"`},
		"GET accept":      {"GET", reader.Key, "", map[string]string{"Accept": "application/json", "Mcp-Session-Id": sid}, 406, `"message":"Accept must list text/event-stream"`},
		"DELETE unknown":  {"DELETE", reader.Key, "", map[string]string{"Mcp-Session-Id": "x"}, 404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`},
		"unknown method":  {"POST", reader.Key, `{"jsonrpc":"2.0","id":4,"method":"tools/destroy"}`, mcpHeaders(sid), 200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}`},
		"invalid session": {"POST", reader.Key, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, mcpHeaders("x"), 404, `"code":-32001`},
	} {
		t.Run(name, func(t *testing.T) {
			r := g.send(t, c.method, "/v1/mcp", c.key, []byte(c.body), c.hdr)
			if r.status != c.status || !strings.Contains(r.body, c.want) {
				t.Errorf("%d %s, want %d with %s", r.status, r.body, c.status, c.want)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// Quota: tool calls take the tier's units (initialize and tools/list take
// none); once spent, a call is a tool error with retryAfter, RateLimit and
// RateLimit-Policy, answered at once.
func TestQuotaSpentToTheRefusal(t *testing.T) {
	g := newGateway(t)
	tiny := g.issue(t, "tiny") // 3/m
	g.start(t, gatewayConfig{})
	cs := g.connect(t, tiny.Key, nil)
	toolNames(t, cs)
	for i := range 3 {
		if res, text := callText(t, cs, "get_book", map[string]any{"id": "b1"}); res.IsError {
			t.Fatalf("call %d: %s", i+1, text)
		}
	}
	before := g.up.calls.Load()
	res, text := callText(t, cs, "get_book", map[string]any{"id": "b1"})
	if !res.IsError || !strings.HasPrefix(text, "Rate limit exceeded (HTTP 429; retry after ") {
		t.Fatalf("the fourth call: %v %q", res.IsError, text)
	}
	ra, ok := res.Meta["retryAfter"].(float64)
	if !ok || ra < 1 || ra > 60 {
		t.Errorf("retryAfter %v", res.Meta["retryAfter"])
	}
	if rl, _ := res.Meta["rateLimit"].(string); !strings.Contains(rl, ";r=0;t=") {
		t.Errorf("rateLimit %q", rl)
	}
	if p, _ := res.Meta["rateLimitPolicy"].(string); !strings.Contains(p, "q=3") {
		t.Errorf("rateLimitPolicy %q", p)
	}
	if n := g.up.calls.Load() - before; n != 0 {
		t.Errorf("the refused call reached the upstream (%d)", n)
	}
	if n := g.scrape(t, `civicgate_mcp_tool_calls_total{outcome="rate_limited"}`); n < 1 {
		t.Errorf("rate_limited calls %v", n)
	}
}

// A revoked key's session ends: its event stream is closed by the
// gateway, and the session is gone (docs/design.md D22: within 2 s of the
// revocation; awaited up to revokeCeiling, the latency logged).
func TestRevokedKeyEndsSession(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	sid := g.initialize(t, reader.Key, nil)
	g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), mcpHeaders(sid))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.base+"/v1/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+reader.Key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	ended := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
		}
		ended <- time.Now()
	}()
	revokedBefore := g.scrape(t, `civicgate_mcp_sessions_ended_total{reason="revoked"}`)
	revoked := time.Now()
	if _, err := keystore.RevokeFile(g.keysFile, reader.ID); err != nil {
		t.Fatal(err)
	}
	const revokeCeiling = 30 * time.Second
	select {
	case at := <-ended:
		t.Logf("the session's stream ended %s after the revocation was written (docs/design.md D22: within 2 s; the keys file is polled every second)",
			at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(revokeCeiling):
		t.Fatalf("the session's stream still open %s after the revocation: the credential watch never fired", revokeCeiling)
	}
	if n := g.scrape(t, `civicgate_mcp_sessions_ended_total{reason="revoked"}`); n != revokedBefore+1 {
		t.Errorf("sessions ended as revoked: %v, want %v", n, revokedBefore+1)
	}
	r := g.send(t, http.MethodPost, "/v1/mcp", reader.Key, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`), mcpHeaders(sid))
	if r.status != http.StatusUnauthorized || r.body != `{"error":"API key revoked"}` {
		t.Errorf("the revoked key after: %d %s", r.status, r.body)
	}
}

// A tier change of the session's key (the keys file edited) reaches the
// open session: its next request lists the new tier's tools, the client
// is told the list changed, and the new family's tool runs.
func TestTierChangeReachesTheSession(t *testing.T) {
	g := newGateway(t)
	key := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	var changed atomic.Int32
	cs := g.connect(t, key.Key, &mcpsdk.ClientOptions{ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
		changed.Add(1)
	}})
	if got := toolNames(t, cs); slices.Contains(got, "member_loans") {
		t.Fatalf("reader lists %v", got)
	}
	g.setTier(t, key.ID, "partner")
	testenv.EventuallyTrue(t, 30*time.Second, "the session lists member_loans", func() bool {
		return slices.Contains(toolNames(t, cs), "member_loans")
	})
	testenv.EventuallyTrue(t, 30*time.Second, "notifications/tools/list_changed", func() bool { return changed.Load() > 0 })
	res, text := callText(t, cs, "member_loans", map[string]any{"memberId": "m1"})
	if res.IsError {
		t.Fatalf("member_loans after the change: %s", text)
	}
	// And back: the tool leaves, and calling it is refused as outside the tier.
	g.setTier(t, key.ID, "reader")
	testenv.EventuallyTrue(t, 30*time.Second, "the session no longer lists member_loans", func() bool {
		return !slices.Contains(toolNames(t, cs), "member_loans")
	})
	_, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "member_loans", Arguments: map[string]any{"memberId": "m1"}})
	checkNotEntitled(t, err, "loans")
}

// When the chain refuses a call for its family (graphql_guard's families
// differ from civic_mcp's), the call is a JSON-RPC error with the 403's
// words and the families named in its data.
func TestGuardRefusalIsNotEntitled(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	// civic_mcp lists loans as catalog; the guard knows better.
	g.start(t, gatewayConfig{mcpFamily: "family catalog books book authors loans"})
	cs := g.connect(t, reader.Key, nil)
	before := g.scrape(t, `civicgate_mcp_tool_calls_total{outcome="not_entitled"}`)
	_, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "member_loans", Arguments: map[string]any{"memberId": "m1"}})
	checkNotEntitled(t, err, "loans")
	if n := g.scrape(t, `civicgate_mcp_tool_calls_total{outcome="not_entitled"}`); n != before+1 {
		t.Errorf("not_entitled calls %v, want %v", n, before+1)
	}
}

// checkNotEntitled checks a tools/call's JSON-RPC error: the 403's words,
// civic_mcp's code, the families lacked in its data.
func checkNotEntitled(t *testing.T, err error, family string) {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	var data struct{ RefusedFamily string }
	_ = json.Unmarshal(rpc.Data, &data)
	if rpc.Code != codeNotEntitled || rpc.Message != contract.MsgNotEntitled || data.RefusedFamily != family {
		t.Errorf("error %d %q %s, want %d %q refusedFamily %s", rpc.Code, rpc.Message, rpc.Data, codeNotEntitled, contract.MsgNotEntitled, family)
	}
}
