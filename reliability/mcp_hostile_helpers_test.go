package reliability

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// mcpAttack is the stack under attack and everything it answered.
type mcpAttack struct {
	t           *testing.T
	s           *stack.Stack
	up          *recorder
	key, victim string
	log         *answerLog
}

// answerLog is every answer's head and body, checked for keys at the end.
type answerLog struct {
	mu     sync.Mutex
	seen   []string
	callID int
}

// in is a for the (sub)test t: its failures are t's.
func (a *mcpAttack) in(t *testing.T) *mcpAttack {
	b := *a
	b.t = t
	return &b
}

// mcpAnswer is an answer of /v1/mcp.
type mcpAnswer struct {
	status int
	header http.Header
	body   string
}

// do sends method to /v1/mcp with key ("" none), session ("" none), a body
// and the Streamable HTTP headers, then extra.
func (a *mcpAttack) do(method, key, session, body string, extra map[string]string) mcpAnswer {
	a.t.Helper()
	req, err := http.NewRequestWithContext(a.t.Context(), method, a.s.HTTPSURL+"/v1/mcp", strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	return a.exchange(req, key, session, extra)
}

// doReader POSTs a body of unknown length (chunked).
func (a *mcpAttack) doReader(key, session string, body io.Reader) mcpAnswer {
	a.t.Helper()
	req, err := http.NewRequestWithContext(a.t.Context(), http.MethodPost, a.s.HTTPSURL+"/v1/mcp", io.NopCloser(body))
	if err != nil {
		a.t.Fatal(err)
	}
	return a.exchange(req, key, session, nil)
}

func (a *mcpAttack) exchange(req *http.Request, key, session string, extra map[string]string) mcpAnswer {
	a.t.Helper()
	r, err := a.try(req, key, session, extra)
	if err != nil {
		a.t.Fatal(err)
	}
	return r
}

// try is exchange returning its error, for goroutines other than the test's.
func (a *mcpAttack) try(req *http.Request, key, session string, extra map[string]string) (mcpAnswer, error) {
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if req.Method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header["Mcp-Session-Id"] = []string{session}
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := a.s.Client.Do(req)
	if err != nil {
		return mcpAnswer{}, fmt.Errorf("%s /v1/mcp: %w", req.Method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return mcpAnswer{}, fmt.Errorf("%s /v1/mcp: reading the answer: %w", req.Method, err)
	}
	var head strings.Builder
	_ = resp.Header.Write(&head)
	a.log.mu.Lock()
	a.log.seen = append(a.log.seen, head.String()+string(b))
	a.log.mu.Unlock()
	return mcpAnswer{resp.StatusCode, resp.Header, string(b)}, nil
}

// initialize opens a session of key and completes the handshake.
func (a *mcpAttack) initialize(key string) string {
	a.t.Helper()
	r := a.do(http.MethodPost, key, "", mcpInit, nil)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		a.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if r := a.do(http.MethodPost, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); r.status != http.StatusAccepted {
		a.t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	return sid
}

// toolsList lists the session's tools with the attacker's key or the
// victim's (whichever owns it), failing unless it answers.
func (a *mcpAttack) toolsList(session string) {
	a.t.Helper()
	for _, key := range []string{a.key, a.victim} {
		r := a.do(http.MethodPost, key, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
		if r.status == http.StatusNotFound {
			continue
		}
		if msg := rpcMessage(a.t, r); r.status != http.StatusOK || msg.Error != nil || !strings.Contains(string(msg.Result), `"search_bills"`) {
			a.t.Errorf("tools/list of session: %d %.300s", r.status, r.body)
		}
		return
	}
	a.t.Errorf("session %.8s… is gone", session)
}

// rpcMsg is one JSON-RPC response.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpcMessage reads the JSON-RPC response of an answer, JSON or an event
// stream's last data line.
func rpcMessage(t *testing.T, r mcpAnswer) rpcMsg {
	t.Helper()
	body := r.body
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		body = ""
		sc := bufio.NewScanner(strings.NewReader(r.body))
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				body = d
			}
		}
	}
	var m rpcMsg
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON-RPC message: %d %.300s", r.status, r.body)
	}
	return m
}

// toolResult is a tools/call result.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// call sends tools/call with raw JSON arguments in the session.
func (a *mcpAttack) call(session, tool, args string) toolResult {
	a.t.Helper()
	a.log.mu.Lock()
	a.log.callID++
	id := 100 + a.log.callID
	a.log.mu.Unlock()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
	r := a.do(http.MethodPost, a.key, session, body, nil)
	msg := rpcMessage(a.t, r)
	if r.status != http.StatusOK || msg.Error != nil {
		a.t.Fatalf("tools/call %s: %d %.300s", tool, r.status, r.body)
	}
	var res toolResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		a.t.Fatalf("tools/call %s result %.300s: %v", tool, msg.Result, err)
	}
	return res
}

// metric reads a gateway metric sample, labels included (0: not exposed).
func (a *mcpAttack) metric(name string) float64 {
	a.t.Helper()
	v, err := a.s.GatewayMetric(a.t.Context(), name)
	if err != nil {
		if strings.Contains(err.Error(), "not exposed") {
			return 0
		}
		a.t.Fatalf("metric %s: %v", name, err)
	}
	return v
}

// recorder is a reverse proxy in front of recordsd that keeps the body of
// every request it forwards.
type recorder struct {
	addr   string
	mu     sync.Mutex
	bodies []string
}

func newRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		u.mu.Lock()
		u.bodies = append(u.bodies, string(body))
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.addr = srv.Listener.Addr().String()
	return u
}

func (u *recorder) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.bodies)
}

// since returns the bodies forwarded after the first n.
func (u *recorder) since(n int) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.bodies[n:]...)
}

// mcpManifest reads caddyfile/mcp-tools.json by operation name.
func mcpManifest(t *testing.T, root string) map[string]struct{ Body string } {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "caddyfile", "mcp-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Operations []struct{ Name, Body string }
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct{ Body string }{}
	for _, op := range m.Operations {
		out[op.Name] = struct{ Body string }{op.Body}
	}
	return out
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
