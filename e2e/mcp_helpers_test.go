package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// The MCP tests drive /v1/mcp of the built gateway — the shipped
// Caddyfile.local and its routes.caddy, civic_mcp serving
// caddyfile/mcp-tools.json (docs/mcp.md) — with the official SDKs' clients,
// and compare what a tool call answers with the same operation sent as
// POST /v1/graphql through the same gateway.

// mcpPath is the MCP endpoint of the shipped routes.
const mcpPath = "/v1/mcp"

// startMCPStack brings up a seeded stack on the shipped Caddyfile.local,
// flushing usage every second (the usage check awaits it).
func startMCPStack(t *testing.T) *stack.Stack {
	t.Helper()
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	return s
}

// bearerTransport sends every request with the key in Authorization.
type bearerTransport struct {
	key  string
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpConnect opens a session with key through the go-sdk's client at
// revision 2025-11-25 (no standalone event stream: the tests that need one
// open it raw), closed (DELETE) when the test ends.
func mcpConnect(t *testing.T, s *stack.Stack, key string) *mcpsdk.ClientSession {
	t.Helper()
	cs, err := mcpTryConnect(t.Context(), s, key)
	if err != nil {
		t.Fatalf("MCP initialize through the shipped route %s: %v", mcpPath, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func mcpTryConnect(ctx context.Context, s *stack.Stack, key string) (*mcpsdk.ClientSession, error) {
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "civicgate-e2e", Version: "1"}, nil)
	return client.Connect(ctx, &mcpsdk.StreamableClientTransport{
		Endpoint:             s.HTTPSURL + mcpPath,
		HTTPClient:           &http.Client{Transport: bearerTransport{key, s.Client.Transport}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, &mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // the SDK's default is 2026-07-28 (no session)
}

// mcpToolNames lists the session's tools by name (every page).
func mcpToolNames(t *testing.T, cs *mcpsdk.ClientSession) []string {
	t.Helper()
	var names []string
	for _, tool := range mcpTools(t, cs) {
		names = append(names, tool.Name)
	}
	return names
}

func mcpTools(t *testing.T, cs *mcpsdk.ClientSession) []*mcpsdk.Tool {
	t.Helper()
	var tools []*mcpsdk.Tool
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		tools = append(tools, tool)
	}
	return tools
}

// mcpCall calls a tool and returns its result and the text of its content.
func mcpCall(t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) (*mcpsdk.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res, resultText(res)
}

func resultText(res *mcpsdk.CallToolResult) string {
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String()
}

// mcpData is a successful call's structuredContent, which must be the text
// content's JSON too.
func mcpData(t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) json.RawMessage {
	t.Helper()
	res, text := mcpCall(t, cs, name, args)
	if res.IsError {
		t.Fatalf("tools/call %s %v: tool error %q", name, args, text)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(sc, []byte(text)) {
		t.Fatalf("tools/call %s: structuredContent %s differs from its text %s", name, sc, text)
	}
	return sc
}

// manifestOp is one operation of caddyfile/mcp-tools.json.
type manifestOp struct {
	Name string `json:"name"`
	Body string `json:"body"`
}

// shippedManifest reads the shipped tool manifest, by operation name.
func shippedManifest(t *testing.T, root string) map[string]manifestOp {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "caddyfile", "mcp-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Operations []manifestOp `json:"operations"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	ops := map[string]manifestOp{}
	for _, op := range m.Operations {
		ops[op.Name] = op
	}
	return ops
}

// graphqlOp sends the manifest's operation with vars as POST /v1/graphql
// (what a tool call sends through the chain) and returns its data.
func graphqlOp(t *testing.T, s *stack.Stack, key string, op manifestOp, vars map[string]any) json.RawMessage {
	t.Helper()
	if op.Body == "" {
		t.Fatalf("operation %q is not in the shipped manifest", op.Name)
	}
	body, err := json.Marshal(map[string]any{"query": op.Body, "operationName": op.Name, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	x := send(t, s, http.MethodPost, "/v1/graphql", key, string(body))
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []any           `json:"errors"`
	}
	if err := json.Unmarshal([]byte(x.body), &out); err != nil || x.status != http.StatusOK || len(out.Errors) > 0 || len(out.Data) == 0 {
		t.Fatalf("POST /v1/graphql %s %v: %d %s", op.Name, vars, x.status, x.body)
	}
	return out.Data
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// gatewaySample reads one sample of the gateway's admin /metrics, a
// labelled one included (`name{label="v"}`); 0 when not exposed yet (a
// counter vector shows a label once it was counted).
func gatewaySample(t *testing.T, s *stack.Stack, name string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	v, err := s.GatewayMetric(ctx, name)
	if err != nil && strings.Contains(err.Error(), "not exposed") {
		return 0
	}
	if err != nil {
		t.Fatalf("gateway metric %s: %v", name, err)
	}
	return v
}

// eventStream is a raw GET of a session's standalone event stream; ended
// receives the time its body ended.
type eventStream struct {
	resp  *http.Response
	ended chan time.Time
}

// openEventStream opens the session's GET stream with key.
func openEventStream(t *testing.T, s *stack.Stack, key, session string) *eventStream {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.HTTPSURL+mcpPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	// Not s.Client: its 30 s timeout would end the stream itself.
	resp, err := (&http.Client{Transport: s.Client.Transport}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", mcpPath, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: %d %s", mcpPath, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	es := &eventStream{resp: resp, ended: make(chan time.Time, 1)}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
		}
		es.ended <- time.Now()
	}()
	return es
}

// rpcReply is a raw JSON-RPC POST's answer.
type rpcReply struct {
	status int
	header http.Header
	body   string
}

// rawMCP POSTs one JSON-RPC message (or anything) to /v1/mcp with key and
// the Streamable HTTP headers, the session's when session is not "".
func rawMCP(t *testing.T, s *stack.Stack, method, key, session, body string, extra map[string]string) rpcReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.HTTPSURL+mcpPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, mcpPath, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, mcpPath, err)
	}
	return rpcReply{resp.StatusCode, resp.Header, string(b)}
}
