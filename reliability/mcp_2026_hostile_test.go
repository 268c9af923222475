package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestMCP2026Hostile attacks revision 2026-07-28 on /v1/mcp (docs/design.md
// D80) on the built gateway with the shipped Caddyfile.local: _meta spoofing
// another version or client, the standard headers disagreeing with the body
// in every field, oversized, malformed and missing headers, and a flood of
// subscriptions/listen (bounded per key). Every refusal is answered before anything goes
// upstream, and no answer holds a key.
func TestMCP2026Hostile(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	a := &mcpAttack{t: t, s: s, log: &answerLog{}}
	a.key, _ = s.IssueKey("mcp26free", "free", "live") // bills, members: no lobbying_disclosures
	keys := []string{a.key}
	s.StartRecordsd()
	a.up = newRecorder(t, s.Getenv("RECORDSD_LISTEN"))
	s.Setenv("CIVICGATE_UPSTREAM", a.up.addr)
	s.StartGateway("caddyfile/Caddyfile.local")

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"hostile","version":"1"}}`
	hdr := func(method, name string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}
	call := func(id int, tool, extra string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"first":1}` + extra + `,` + meta + `}}`
	}
	// refused sends body with headers and wants status and JSON-RPC code,
	// nothing upstream.
	refused := func(t *testing.T, what, body string, h map[string]string, status, code int) {
		t.Helper()
		before := a.up.count()
		r := a.in(t).do(http.MethodPost, a.key, "", body, h)
		var m rpcMsg
		if r.status != status || json.Unmarshal([]byte(r.body), &m) != nil || m.Error == nil || m.Error.Code != code {
			t.Errorf("%s: %d %.300s, want %d with code %d", what, r.status, r.body, status, code)
		}
		if n := a.up.count() - before; n != 0 {
			t.Errorf("%s: %d requests upstream", what, n)
		}
	}

	t.Run("Served", func(t *testing.T) {
		r := a.in(t).do(http.MethodPost, a.key, "", call(1, "search_bills", ""), hdr("tools/call", "search_bills"))
		if m := rpcMessage(t, r); r.status != http.StatusOK || m.Error != nil || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
			t.Fatalf("a plain modern call: %d %.300s", r.status, r.body)
		}
	})

	t.Run("MetaSpoofing", func(t *testing.T) {
		swap := func(body, from, to string) string { return strings.Replace(body, from, to, 1) }
		c := call(2, "search_bills", "")
		refused(t, "_meta says 2025-11-25", swap(c, `protocolVersion":"2026-07-28"`, `protocolVersion":"2025-11-25"`), hdr("tools/call", "search_bills"), 400, -32020)
		refused(t, "_meta says 2099-01-01", swap(c, `protocolVersion":"2026-07-28"`, `protocolVersion":"2099-01-01"`), hdr("tools/call", "search_bills"), 400, -32020)
		refused(t, "_meta version a number", swap(c, `"2026-07-28"`, `20260728`), hdr("tools/call", "search_bills"), 400, -32602)
		refused(t, "_meta without capabilities", swap(c, `"io.modelcontextprotocol/clientCapabilities":{},`, ``), hdr("tools/call", "search_bills"), 400, -32602)
		refused(t, "clientInfo not an Implementation", swap(c, `{"name":"hostile","version":"1"}`, `"civicgate"`), hdr("tools/call", "search_bills"), 400, -32602)
		// A 2025 session's message whose _meta claims the modern revision.
		sid := a.in(t).initialize(a.key)
		r := a.in(t).do(http.MethodPost, a.key, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+meta+`}}`, nil)
		if m := rpcMessage(t, r); r.status != 400 || m.Error == nil || m.Error.Code != -32020 {
			t.Errorf("2025 header, 2026 _meta: %d %.300s", r.status, r.body)
		}
		// No version header at all, _meta saying 2026-07-28: the 2025 era's
		// refusal, not a modern answer.
		r = a.in(t).do(http.MethodPost, a.key, "", c, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "search_bills"})
		if r.status != 400 {
			t.Errorf("no version header: %d %.300s", r.status, r.body)
		}
		// Another client's identity, or the server's, changes nothing.
		for _, spoof := range []string{`{"name":"claude-code","version":"9.9.9"}`, `{"name":"civicgate","version":"v0"}`} {
			body := swap(c, `{"name":"hostile","version":"1"}`, spoof)
			body = swap(body, `"_meta":{`, `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"},`)
			r := a.in(t).do(http.MethodPost, a.key, "", body, hdr("tools/call", "search_bills"))
			if m := rpcMessage(t, r); r.status != 200 || m.Error != nil || !strings.Contains(string(m.Result), `"io.modelcontextprotocol/serverInfo":{"name":"civicgate"`) {
				t.Errorf("clientInfo %s: %d %.300s", spoof, r.status, r.body)
			}
		}
	})

	t.Run("HeaderBodyDisagreement", func(t *testing.T) {
		// The header names a tool the tier has, the body one it lacks.
		refused(t, "Mcp-Name entitled, body not", call(4, "search_lobbying_disclosures", ""), hdr("tools/call", "search_bills"), 400, -32020)
		// The reverse is refused from the header, the body unread.
		refused(t, "Mcp-Name not entitled", call(5, "search_bills", ""), hdr("tools/call", "search_lobbying_disclosures"), 403, -31030)
		refused(t, "Mcp-Method tools/list, body tools/call", call(6, "search_bills", ""), hdr("tools/list", ""), 400, -32020)
		refused(t, "Mcp-Method tools/call, body tools/list", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{`+meta+`}}`, hdr("tools/call", "search_bills"), 400, -32020)
		refused(t, "Mcp-Method in another case", call(8, "search_bills", ""), hdr("Tools/Call", "search_bills"), 400, -32020)
		refused(t, "Base64 Mcp-Name of another tool", call(9, "search_bills", ""), hdr("tools/call", "=?base64?Z2V0X2JpbGw=?="), 400, -32020)
		refused(t, "version header not _meta's", call(10, "search_bills", ""), map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "search_bills"}, 400, -32020)
		refused(t, "name twice in params, the last another", call(11, "search_bills", `,"name":"search_lobbying_disclosures"`), hdr("tools/call", "search_bills"), 400, -32020)
	})

	t.Run("OversizedAndMissingHeaders", func(t *testing.T) {
		c := call(12, "search_bills", "")
		refused(t, "Mcp-Method of 600 bytes", c, hdr("tools/call"+strings.Repeat("x", 590), "search_bills"), 400, -32020)
		refused(t, "Mcp-Name of 10 KB", c, hdr("tools/call", strings.Repeat("n", 10<<10)), 400, -32020)
		refused(t, "Mcp-Name not ASCII", c, hdr("tools/call", "search_bills\xff"), 400, -32020)
		refused(t, "Mcp-Name bad Base64", c, hdr("tools/call", "=?base64?!!?="), 400, -32020)
		refused(t, "no Mcp-Name", c, hdr("tools/call", ""), 400, -32020)
		h := hdr("", "")
		delete(h, "Mcp-Method")
		refused(t, "no Mcp-Method", c, h, 400, -32020)
		refused(t, "version of 4 KB", c, map[string]string{"Mcp-Protocol-Version": strings.Repeat("9", 4<<10), "Mcp-Method": "tools/call", "Mcp-Name": "search_bills"}, 400, -32022)
		r := a.in(t).do(http.MethodPost, a.key, "", c, map[string]string{"Mcp-Protocol-Version": strings.Repeat("9", 4<<10)})
		if len(r.body) > 1<<10 {
			t.Errorf("an oversized version is echoed whole: %d bytes", len(r.body))
		}
	})

	t.Run("ListenFlood", func(t *testing.T) {
		// 40 subscriptions/listen at once from one key: at most
		// max_sessions_per_key (10 in routes.caddy) are held, each
		// acknowledged; the others are refused 429 at once. Closing them
		// frees their places.
		listen := `{"jsonrpc":"2.0","id":13,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		statuses := make([]int, 40)
		acked := make(chan struct{}, len(statuses))
		for i := range statuses {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.HTTPSURL+"/v1/mcp", strings.NewReader(listen))
				req.Header.Set("Authorization", "Bearer "+a.key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range hdr("subscriptions/listen", "") {
					req.Header.Set(k, v)
				}
				resp, err := s.Client.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				statuses[i] = resp.StatusCode
				if resp.StatusCode == http.StatusOK {
					sc := bufio.NewScanner(resp.Body)
					for sc.Scan() {
						if strings.Contains(sc.Text(), "notifications/subscriptions/acknowledged") {
							acked <- struct{}{}
						}
					}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				acked <- struct{}{}
			})
		}
		for range statuses {
			<-acked // every stream acknowledged or refused
		}
		if n := a.in(t).metric("civicgate_mcp_listens_open"); n != 10 {
			t.Errorf("civicgate_mcp_listens_open %v, want 10", n)
		}
		cancel()
		wg.Wait()
		held := 0
		for i, st := range statuses {
			switch st {
			case http.StatusOK:
				held++
			case http.StatusTooManyRequests:
			default:
				t.Errorf("listen %d: %d", i, st)
			}
		}
		if held != 10 {
			t.Errorf("%d streams held, want max_sessions_per_key (10)", held)
		}
		r := a.in(t).do(http.MethodPost, a.key, "", call(14, "search_bills", ""), hdr("tools/call", "search_bills"))
		if r.status != http.StatusOK {
			t.Errorf("a call after the flood: %d %.300s", r.status, r.body)
		}
	})

	t.Run("OverRateBodyUnread", func(t *testing.T) {
		// A key of the free tier (30/m) calls until refused: the 31st call
		// is the first 429 (each call charged once, from the headers), and
		// an over-rate call is refused before its body is read — 200 KB of
		// garbage gets the same 429 -31032 without an id, not a parse error,
		// and nothing goes upstream (docs/design.md D80).
		over, _ := s.IssueKey("mcp26over", "free", "live")
		keys = append(keys, over)
		h := hdr("tools/call", "search_bills")
		served := 0
		for ; served < 40; served++ {
			if r := a.in(t).do(http.MethodPost, over, "", call(20+served, "search_bills", ""), h); r.status != http.StatusOK {
				break
			}
		}
		if served != 30 {
			t.Errorf("%d calls served before the first refusal, want the tier's 30", served)
		}
		before := a.up.count()
		for what, body := range map[string]string{
			"a call":              call(99, "search_bills", ""),
			"200 KB of garbage":   strings.Repeat("{[\"", 70<<10),
			"another tool's body": call(98, "search_lobbying_disclosures", ""),
		} {
			r := a.in(t).do(http.MethodPost, over, "", body, h)
			var m rpcMsg
			if r.status != http.StatusTooManyRequests || json.Unmarshal([]byte(r.body), &m) != nil || m.Error == nil ||
				m.Error.Code != -31032 || strings.Contains(r.body, `"id"`) || r.header.Get("Retry-After") == "" {
				t.Errorf("%s over the rate: %d %.300s, want 429 -31032 without an id", what, r.status, r.body)
			}
		}
		if n := a.up.count() - before; n != 0 {
			t.Errorf("%d requests upstream over the rate", n)
		}
	})

	for _, body := range a.log.seen {
		for _, k := range keys {
			if strings.Contains(body, k) || strings.Contains(body, k[len(k)-20:]) {
				t.Errorf("an answer holds a key: %.200s", body)
			}
		}
	}
	s.CheckLogs(t, keys...)
}
