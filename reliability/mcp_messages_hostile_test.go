package reliability

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestMCPMessagesHostile attacks the two rules of docs/design.md D65 on the
// built gateway with the shipped Caddyfile.local (message_rate 600/m):
// messages whose method is spelled so that the router might read a
// tools/call (counted as a call, not a message) where the SDK serves
// something else, or the reverse — each refused before the SDK, nothing
// sent upstream; and a key flooding pings, refused once over its message
// rate while its tool calls are still served.
func TestMCPMessagesHostile(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	a := &mcpAttack{t: t, s: s, log: &answerLog{}}
	a.key, _ = s.IssueKey("mcpspeller", "enterprise", "live")
	flood, _ := s.IssueKey("mcppinger", "enterprise", "live")
	keys := []string{a.key, flood}
	s.StartRecordsd()
	a.up = newRecorder(t, s.Getenv("RECORDSD_LISTEN"))
	s.Setenv("CIVICGATE_UPSTREAM", a.up.addr)
	s.StartGateway("caddyfile/Caddyfile.local")
	sid := a.initialize(a.key)

	t.Run("MethodSpellings", func(t *testing.T) {
		a := a.in(t)
		const refused = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the id and method members must each be written once, exactly so (lower case, without escapes)"}}`
		params := `"params":{"name":"get_bill","arguments":{"id":"hr1-118"}}`
		before := a.up.count()
		for i, members := range []string{
			`"Method":"tools/call"`,
			`"METHOD":"tools/call"`,
			`"method":"ping","Method":"tools/call"`,
			`"Method":"tools/call","method":"ping"`,
			`"method":"ping","method":"tools/call"`,
			`"method":"tools/call","method":"ping"`,
			`"\u006dethod":"tools/call"`,
			`"\u006Dethod":"ping"`,
			`"me\u0074hod":"tools/list"`,
			`"method":"tools/call","ID":7`,
			`"method":"tools/call","id":7`, // with the id below: twice
		} {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s,%s}`, 500+i, members, params)
			r := a.do(http.MethodPost, a.key, sid, body, nil)
			if r.status != http.StatusBadRequest || r.body != refused {
				t.Errorf("%s: %d %s", body, r.status, r.body)
			}
		}
		// A notification spelled so, and an initialize without a session.
		for _, c := range []struct{ session, body string }{
			{sid, `{"jsonrpc":"2.0","Method":"notifications/cancelled","params":{"requestId":1}}`},
			{"", `{"jsonrpc":"2.0","id":1,"Method":"initialize","method":"initialize","params":{}}`},
		} {
			if r := a.do(http.MethodPost, a.key, c.session, c.body, nil); r.status != http.StatusBadRequest || r.body != refused {
				t.Errorf("%s: %d %s", c.body, r.status, r.body)
			}
		}
		if n := a.up.count() - before; n != 0 {
			t.Errorf("the spellings sent %d requests upstream", n)
		}
		// Escapes in the value are read alike by the router and the SDK: a call.
		r := a.do(http.MethodPost, a.key, sid, `{"jsonrpc":"2.0","id":600,"method":"tools\/call",`+params+`}`, nil)
		if msg := rpcMessage(t, r); r.status != http.StatusOK || msg.Error != nil || a.up.count()-before != 1 {
			t.Errorf("tools\\/call: %d %.300s, %d requests upstream", r.status, r.body, a.up.count()-before)
		}
		a.toolsList(sid) // the session still serves
	})

	t.Run("PingFlood", func(t *testing.T) {
		a := a.in(t)
		a.key = flood
		refusedBefore := a.metric(`civicgate_mcp_refusals_total{reason="message_rate"}`)
		fsid := a.initialize(flood) // 2 messages
		admitted, refused := 2, 0
		var first mcpAnswer
		for i := range 700 {
			r := a.do(http.MethodPost, flood, fsid, `{"jsonrpc":"2.0","id":`+strconv.Itoa(1000+i)+`,"method":"ping"}`, nil)
			switch r.status {
			case http.StatusOK:
				if refused > 0 {
					t.Fatalf("ping %d admitted after %d refused: the window is 60 s", i, refused)
				}
				admitted++
			case http.StatusTooManyRequests:
				if refused == 0 {
					first = r
				}
				refused++
			default:
				t.Fatalf("ping %d: %d %s", i, r.status, r.body)
			}
		}
		t.Logf("%d messages admitted, %d refused", admitted, refused)
		// One gateway: never more than the quota; its lease (2 % of it) is
		// the most it may leave unspent (modules/ratelimit README "Leases").
		if admitted > 600 || admitted < 588 {
			t.Errorf("%d messages admitted in a minute under message_rate 600/m", admitted)
		}
		var e struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Data    struct {
					RetryAfter      int    `json:"retryAfter"`
					RateLimitPolicy string `json:"rateLimitPolicy"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(first.body), &e); err != nil || e.Error.Code != -32032 ||
			e.Error.Message != "Rate limit exceeded (HTTP 429; retry after "+first.header.Get("Retry-After")+" s)" ||
			strconv.Itoa(e.Error.Data.RetryAfter) != first.header.Get("Retry-After") ||
			e.Error.Data.RateLimitPolicy != `"mcp_messages";q=600;w=60` || first.header.Get("RateLimit-Policy") != `"mcp_messages";q=600;w=60` {
			t.Errorf("the first refusal: %v %s %v", err, first.body, first.header)
		}
		if n := a.metric(`civicgate_mcp_refusals_total{reason="message_rate"}`) - refusedBefore; int(n) != refused {
			t.Errorf("civicgate_mcp_refusals_total{reason=\"message_rate\"} grew by %v, %d refused", n, refused)
		}
		// Over the message rate, the key's tool calls are still served (one
		// request of its API rate each; this one may be a cache hit).
		if res := a.call(fsid, "get_bill", `{"id":"hr1-118"}`); res.IsError || !strings.Contains(res.text(), `"id":"hr1-118"`) {
			t.Errorf("a call over the message rate: %s", res.text())
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
