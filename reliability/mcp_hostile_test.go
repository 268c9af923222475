package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestMCPHostile attacks /v1/mcp of the built gateway on the shipped
// Caddyfile.local (civic_mcp with its shipped options: max_message 1MiB,
// max_sessions_per_key 10, no allowed origins) with requests written by
// hand, each answered with its exact status and body (docs/mcp.md "What
// each request gets", "A tools/call answers"). recordsd sits behind a
// recording proxy (CIVICGATE_UPSTREAM points at it), so "nothing was sent
// upstream" is counted, and what was sent is read. No answer and no log
// line holds a key.
func TestMCPHostile(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	a := &mcpAttack{t: t, s: s, log: &answerLog{}}
	a.key, _ = s.IssueKey("mcpattacker", "enterprise", "live")
	a.victim, _ = s.IssueKey("mcpvictim", "enterprise", "live")
	flood, _ := s.IssueKey("mcpflood", "enterprise", "live")
	slow, _ := s.IssueKey("mcpslow", "enterprise", "live")
	keys := []string{a.key, a.victim, flood, slow}
	s.StartRecordsd()
	a.up = newRecorder(t, s.Getenv("RECORDSD_LISTEN"))
	s.Setenv("CIVICGATE_UPSTREAM", a.up.addr)
	s.StartGateway("caddyfile/Caddyfile.local")
	ops := mcpManifest(t, s.Root)

	t.Run("MissingBearer", func(t *testing.T) {
		a := a.in(t)
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			r := a.do(method, "", "", mcpInit, nil)
			if r.status != http.StatusUnauthorized || r.body != `{"error":"Missing bearer token"}` || r.header.Get("Www-Authenticate") != `Bearer realm="civicgate"` {
				t.Errorf("%s without a bearer: %d %s %q", method, r.status, r.body, r.header.Get("Www-Authenticate"))
			}
		}
	})

	t.Run("Origin", func(t *testing.T) {
		a := a.in(t)
		opened := a.metric(`civicgate_mcp_sessions_opened_total`)
		for _, origin := range []string{"https://evil.example", "null", "http://localhost", a.s.HTTPSURL} {
			r := a.do(http.MethodPost, a.key, "", mcpInit, map[string]string{"Origin": origin})
			if r.status != http.StatusForbidden || r.body != `{"error":"Origin not allowed"}` {
				t.Errorf("Origin %s: %d %s", origin, r.status, r.body)
			}
		}
		if n := a.metric(`civicgate_mcp_sessions_opened_total`); n != opened {
			t.Errorf("sessions opened %v → %v by refused origins", opened, n)
		}
	})

	sid := a.initialize(a.key)

	t.Run("Oversized", func(t *testing.T) {
		a := a.in(t)
		before := a.up.count()
		big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_bills","arguments":{"text":"` + strings.Repeat("a", 1<<20) + `"}}}`
		const tooLarge = `{"errors":[{"message":"Request body too large"}]}`
		if r := a.do(http.MethodPost, a.key, sid, big, nil); r.status != http.StatusRequestEntityTooLarge || r.body != tooLarge {
			t.Errorf("a 1 MiB tools/call: %d %s", r.status, r.body)
		}
		// Chunked, without a length.
		if r := a.doReader(a.key, sid, io.MultiReader(strings.NewReader(big), strings.NewReader(strings.Repeat(" ", 1<<20)))); r.status != http.StatusRequestEntityTooLarge || r.body != tooLarge {
			t.Errorf("a 2 MiB chunked tools/call: %d %s", r.status, r.body)
		}
		// 100 MiB announced, streamed by the test until the gateway stops it.
		head := "POST /v1/mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + a.key +
			"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: " + sid +
			"\r\nContent-Length: " + strconv.Itoa(100<<20) + "\r\n"
		r, err := rawDo(s, head, nil, func(w io.Writer) error {
			chunk := bytes.Repeat([]byte("a"), 64<<10)
			for range 1600 {
				if _, err := w.Write(chunk); err != nil {
					return err
				}
			}
			return nil
		}, time.Minute)
		if err != nil || r.status != http.StatusRequestEntityTooLarge || r.body != tooLarge {
			t.Errorf("100 MiB announced: %v %d %s", err, r.status, r.body)
		}
		a.log.seen = append(a.log.seen, r.body)
		if n := a.up.count() - before; n != 0 {
			t.Errorf("oversized messages sent %d requests upstream", n)
		}
		a.toolsList(sid) // the session still serves
	})

	t.Run("Batch", func(t *testing.T) {
		a := a.in(t)
		const refused = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not accepted (MCP 2025-06-18 and later)"}}`
		for _, c := range []struct{ session, body string }{
			{sid, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`},
			{sid, " \r\n\t[]"},
			{sid, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_bill","arguments":{"id":"hr1-118"}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
			{"", `[` + mcpInit + `]`},
		} {
			if r := a.do(http.MethodPost, a.key, c.session, c.body, nil); r.status != http.StatusBadRequest || r.body != refused {
				t.Errorf("batch %.60s: %d %s", c.body, r.status, r.body)
			}
		}
	})

	t.Run("UnknownMethod", func(t *testing.T) {
		a := a.in(t)
		// JSON-RPC 2.0: a method that does not exist is error -32601 with the
		// request's id, in a JSON-RPC response (200 or 400), never a text page.
		for i, method := range []string{"tools/destroy", "admin/shutdown", "sampling/createMessage"} {
			r := a.do(http.MethodPost, a.key, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{}}`, 40+i, method), nil)
			var msg rpcMsg
			isRPC := strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream")
			if isRPC {
				msg = rpcMessage(t, r)
			}
			if !isRPC || (r.status != http.StatusOK && r.status != http.StatusBadRequest) || msg.Error == nil || msg.Error.Code != -32601 || string(msg.ID) != strconv.Itoa(40+i) {
				t.Errorf("method %s: %d %s %q, want a JSON-RPC error -32601 with id %d", method, r.status, r.header.Get("Content-Type"), r.body, 40+i)
			}
		}
	})

	t.Run("OtherMessages", func(t *testing.T) {
		a := a.in(t)
		// A name of no tool stays the SDK's error (docs/mcp.md "Sessions").
		r := a.do(http.MethodPost, a.key, sid, `{"jsonrpc":"2.0","id":80,"method":"tools/call","params":{"name":"drop_tables","arguments":{}}}`, nil)
		if msg := rpcMessage(t, r); r.status != http.StatusOK || msg.Error == nil || msg.Error.Code != -32602 || msg.Error.Message != `unknown tool "drop_tables"` {
			t.Errorf("a tool of no name: %d %s", r.status, r.body)
		}
		if r := a.do(http.MethodPost, a.key, sid, `{"jsonrpc":"2.0","id":77,"method":"ping"}`, nil); r.status != http.StatusOK || string(rpcMessage(t, r).Result) != "{}" {
			t.Errorf("ping: %d %s", r.status, r.body)
		}
		// What the SDK refuses itself is a 400 (plain text today: docs/mcp.md
		// "the SDK's answer"), an accepted notification or response a 202;
		// never a 5xx, never a page of another kind.
		for body, want := range map[string][]int{
			// MCP lets a server accept (202) or refuse (400) a notification.
			`{"jsonrpc":"2.0","method":"notifications/bogus"}`: {http.StatusAccepted, http.StatusBadRequest},
			`{"jsonrpc":"2.0","id":78}`:                        {http.StatusAccepted},
			`{"jsonrpc":"1.0","id":79,"method":"ping"}`:        {http.StatusBadRequest},
			`{"jsonrpc":"2.0","id":81,"method":"tools/call"}`:  {http.StatusBadRequest},
		} {
			r := a.do(http.MethodPost, a.key, sid, body, nil)
			ct := r.header.Get("Content-Type")
			if !slices.Contains(want, r.status) || (strings.HasPrefix(ct, "application/json") && rpcMessage(t, r).Error == nil) {
				t.Errorf("%s: %d %s %q, want %v", body, r.status, ct, r.body, want)
			}
		}
	})

	t.Run("ArgumentsOutsideTheSchema", func(t *testing.T) {
		a := a.in(t)
		before := a.up.count()
		deep := strings.Repeat("[", 900) + strings.Repeat("]", 900)
		for _, c := range []struct{ tool, args, want string }{
			{"get_bill", `{"id":7}`, `argument "id" must be a string`},
			{"get_bill", `{"id":"hr1-118","limit":3}`, `arguments: "limit" is not an argument of this tool (arguments: id)`},
			{"get_bill", `{}`, `argument "id" is required`},
			{"get_bill", `{"id":null}`, `argument "id" must not be null`},
			{"get_bill", `[1,2]`, `arguments: must be a JSON object`},
			{"search_bills", `{"first":2147483648}`, `argument "first" must be an integer from -2147483648 to 2147483647`},
			{"search_bills", `{"congress":-1e300}`, `argument "congress" must be an integer from -2147483648 to 2147483647`},
			{"search_bills", `{"first":2.5}`, `argument "first" must be an integer from -2147483648 to 2147483647`},
			{"search_bills", `{"text":` + deep + `}`, `argument "text" must be a string`},
			{"search_bills", `{"text":{"$ne":""}}`, `argument "text" must be a string`},
			{"list_budget_lines", `{"dataset":"SECRET"}`, `argument "dataset" must be one of APPROPRIATIONS, OUTLAYS`},
			// A member named like a key is not repeated.
			{"search_bills", `{` + strconv.Quote(a.victim) + `:1}`, `arguments: an unknown member is not an argument of this tool (arguments: congress, type, text, after, first)`},
		} {
			res := a.call(sid, c.tool, c.args)
			if !res.IsError || res.text() != c.want {
				t.Errorf("%s %.80s: isError %v %q, want %q", c.tool, c.args, res.IsError, res.text(), c.want)
			}
		}
		// Nested past what the go-sdk decodes (1 000 levels) or encoding/json
		// (10 000): not a JSON-RPC message the gateway can use, a JSON-RPC
		// parse error like any other (docs/mcp.md: not JSON → 400, -32700).
		for _, depth := range []int{1001, 20000} {
			deeper := strings.Repeat("[", depth) + strings.Repeat("]", depth)
			r := a.do(http.MethodPost, a.key, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_bills","arguments":{"text":`+deeper+`}}}`, nil)
			if r.status != http.StatusBadRequest || r.body != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"The request body is not a JSON-RPC message"}}` {
				t.Errorf("%d-deep arguments: %d %s %.200s", depth, r.status, r.header.Get("Content-Type"), r.body)
			}
		}
		if n := a.up.count() - before; n != 0 {
			t.Errorf("refused arguments sent %d requests upstream: %q", n, a.up.since(before))
		}
	})

	t.Run("ArgumentsAreInert", func(t *testing.T) {
		a := a.in(t)
		search := ops["SearchBills"]
		for _, text := range []string{
			`query { __schema { types { name } } }`,
			`"}) { items { id } } } mutation Drop { dropTables }`,
			`{"query":"{ lobbyingDisclosures { items { id } } }"}`,
			a.victim, // another key's value: a string like any other
		} {
			before := a.up.count()
			res := a.call(sid, "search_bills", mustMarshal(t, map[string]any{"text": text, "first": 2}))
			if res.IsError {
				t.Errorf("search_bills text %.40q: %s", text, res.text())
				continue
			}
			got := a.up.since(before)
			if len(got) != 1 {
				t.Fatalf("search_bills sent %d requests upstream, want 1", len(got))
			}
			var sent struct {
				Query         string         `json:"query"`
				OperationName string         `json:"operationName"`
				Variables     map[string]any `json:"variables"`
			}
			if err := json.Unmarshal([]byte(got[0]), &sent); err != nil {
				t.Fatalf("upstream body %.200s: %v", got[0], err)
			}
			if sent.Query != search.Body || sent.OperationName != "SearchBills" || sent.Variables["text"] != text || len(sent.Variables) != 2 {
				t.Errorf("upstream got query %.60q operationName %q variables %v: want the manifest's document and the text only as $text",
					sent.Query, sent.OperationName, sent.Variables)
			}
		}
		// The caller's own key as an argument: the guard's token scan refuses
		// the request, nothing is forwarded.
		before := a.up.count()
		res := a.call(sid, "search_bills", mustMarshal(t, map[string]any{"text": a.key}))
		if want := "GraphQL error: Request must not contain the bearer token"; !res.IsError || res.text() != want {
			t.Errorf("the caller's key as an argument: %v %q, want %q", res.IsError, res.text(), want)
		}
		if n := a.up.count() - before; n != 0 {
			t.Errorf("the caller's key as an argument went upstream (%d requests)", n)
		}
	})

	t.Run("SessionIDs", func(t *testing.T) {
		a := a.in(t)
		theirs := a.initialize(a.victim)
		const notFound = `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"Session not found"}}`
		for _, forged := range []string{theirs, "AAAAAAAAAAAAAAAAAAAAAAAAAA", sid + "A", strings.ToLower(sid), "../../../etc/passwd",
			strings.Repeat("A", 8<<10), "sessión", "' OR 1=1 --", "%00"} {
			label := forged[:min(len(forged), 30)]
			if r := a.do(http.MethodPost, a.key, forged, `{"jsonrpc":"2.0","id":12,"method":"tools/list"}`, nil); r.status != http.StatusNotFound || r.body != fmt.Sprintf(notFound, "12") {
				t.Errorf("POST with session %q: %d %s", label, r.status, r.body)
			}
			for _, method := range []string{http.MethodGet, http.MethodDelete} {
				if r := a.do(method, a.key, forged, "", nil); r.status != http.StatusNotFound || r.body != fmt.Sprintf(notFound, "null") {
					t.Errorf("%s with session %q: %d %s", method, label, r.status, r.body)
				}
			}
		}
		// The victim's session and the attacker's own are intact.
		a.toolsList(theirs)
		a.toolsList(sid)
	})

	t.Run("InitializeFlood", func(t *testing.T) {
		a := a.in(t)
		testInitializeFlood(t, a, flood)
	})

	t.Run("SlowReaders", func(t *testing.T) {
		a := a.in(t)
		testSlowReaders(t, a, slow)
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

// mcpInit is an initialize request.
const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`

// testInitializeFlood: 40 initialize requests of one key at once open
// exactly max_sessions_per_key (10) sessions; the others are the
// documented 429 with Retry-After. Ending one lets one more in, and another
// key is not affected.
func testInitializeFlood(t *testing.T, a *mcpAttack, key string) {
	const refused = `{"jsonrpc":"2.0","id":1,"error":{"code":-32031,"message":"Too many open MCP sessions for this key; end one (DELETE) or wait for an idle one to expire"}}`
	const counter = `civicgate_mcp_refusals_total{reason="key_sessions"}`
	before := a.metric(counter)
	answers := make([]mcpAnswer, 40)
	errs := make([]error, len(answers))
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.s.HTTPSURL+"/v1/mcp", strings.NewReader(mcpInit))
			if err == nil {
				answers[i], err = a.try(req, key, "", nil)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var sessions []string
	for i, r := range answers {
		switch {
		case errs[i] != nil:
			t.Fatal(errs[i])
		case r.status == http.StatusOK && r.header.Get("Mcp-Session-Id") != "":
			sessions = append(sessions, r.header.Get("Mcp-Session-Id"))
		case r.status == http.StatusTooManyRequests && r.body == refused:
			if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 || n > 600 {
				t.Errorf("Retry-After %q, want the seconds until an idle session expires (≤ 10m)", r.header.Get("Retry-After"))
			}
		default:
			t.Errorf("initialize in a flood: %d %s", r.status, r.body)
		}
	}
	if len(sessions) != 10 {
		t.Fatalf("a flood of 40 initialize opened %d sessions, want max_sessions_per_key 10", len(sessions))
	}
	if n := a.metric(counter) - before; n != 30 {
		t.Errorf("%s grew by %v, want 30", counter, n)
	}
	if r := a.do(http.MethodDelete, key, sessions[0], "", nil); r.status != http.StatusNoContent {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
	a.initialize(key) // the freed slot
	if r := a.do(http.MethodPost, key, "", mcpInit, nil); r.status != http.StatusTooManyRequests || r.body != refused {
		t.Errorf("initialize with the slots full again: %d %s", r.status, r.body)
	}
	a.toolsList(a.initialize(a.victim)) // another key opens sessions as before
}

// testSlowReaders: ten sessions of one key each hold their event stream
// (GET) on a connection the client never reads, while the key's tier is
// changed back and forth and every session's POST lists the tools (each a
// notifications/tools/list_changed written to its stalled stream). A
// second stream of a session is refused (the SDK's 409: one stream per
// session, so a key holds at most max_sessions_per_key streams). Every POST
// is answered, the gateway's heap in use grows by less than 16 MiB, and its
// goroutines go back to where they were once the streams are dropped and
// the sessions deleted.
func testSlowReaders(t *testing.T, a *mcpAttack, key string) {
	s := a.s
	baseGoroutines := settledGoroutines(t, s, 0)
	heapBefore := a.metric(heapMetric)
	var sessions []string
	var conns []net.Conn
	for range 10 {
		sid := a.initialize(key)
		sessions = append(sessions, sid)
		conn, err := dialTLS(s, "http/1.1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns = append(conns, conn)
		_, err = io.WriteString(conn, "GET /v1/mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "+key+
			"\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+sid+"\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
	}
	// A second stream of each session: refused at once (a stream answered
	// 200 would hold this request until its deadline).
	stack.WaitFor(t, 10*time.Second, "the stalled streams held", func() error {
		for i, sid := range sessions {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.HTTPSURL+"/v1/mcp", nil)
			r, err := a.try(req, key, sid, nil)
			cancel()
			if err != nil {
				return err
			}
			if r.status != http.StatusConflict {
				return fmt.Errorf("a second GET stream of session %d: %d %s", i, r.status, r.body)
			}
		}
		return nil
	})
	for round := range 6 {
		tier, tools := "free", 3
		if round%2 == 1 {
			tier, tools = "enterprise", 6
		}
		s.Run(s.Bins.Civicgate, "keys", "set-tier", "--org", "mcpslow", "--tier", tier)
		for i, sid := range sessions {
			stack.WaitFor(t, 15*time.Second, "the tier change seen by the session", func() error {
				r := a.do(http.MethodPost, key, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
				msg := rpcMessage(t, r)
				var list struct{ Tools []struct{ Name string } }
				if r.status != http.StatusOK || msg.Error != nil || json.Unmarshal(msg.Result, &list) != nil {
					t.Fatalf("tools/list of session %d: %d %.300s", i, r.status, r.body)
				}
				if len(list.Tools) != tools {
					return fmt.Errorf("%d tools, want %s's %d", len(list.Tools), tier, tools)
				}
				return nil
			})
		}
	}
	heapAfter := a.metric(heapMetric)
	t.Logf("gateway heap in use %.1f MiB before the stalled streams, %.1f MiB after 6 tier changes notified to each of them",
		heapBefore/(1<<20), heapAfter/(1<<20))
	if heapAfter-heapBefore > 16<<20 {
		t.Errorf("the heap grew by %.1f MiB", (heapAfter-heapBefore)/(1<<20))
	}
	for _, sid := range sessions {
		if r := a.do(http.MethodDelete, key, sid, "", nil); r.status != http.StatusNoContent {
			t.Errorf("DELETE: %d %s", r.status, r.body)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	settledGoroutines(t, s, baseGoroutines+5)
}
