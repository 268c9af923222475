package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// The gateway of these tests is real Caddy in this process (caddytest) with
// the route the shipped Caddyfile has — civic_auth, civic_mcp on /v1/mcp,
// civic_rate_limit, graphql_guard, reverse_proxy, one handle for /v1/graphql
// and /v1/mcp — in front of a real GraphQL engine: the lending library of
// examples/other-backend (gqlgen, verifying X-Civic-Identity), with its own
// tool manifest (testdata/library-tools.json). Keys live in a keys file.

// adminPort is this package's caddytest admin port (one per package).
const adminPort = 2989

const testSecret = "mcp-integration-secret-0123456789abcdef"

// Paths the gateway reads, absolute (Caddy runs in this directory).
var (
	librarySchema = mustAbs("../../examples/other-backend/library.graphqls")
	libraryTools  = mustAbs("testdata/library-tools.json")
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// upstream is the library engine behind a recorder of the requests it got.
type upstream struct {
	srv      *httptest.Server
	calls    atomic.Int64
	waiting  atomic.Int64 // requests for upstream-slow now waiting
	canceled atomic.Int64 // requests for upstream-slow the gateway canceled
	mu       sync.Mutex
	bodies   []string
	headers  []http.Header
}

// Answers the upstream gives in place of the engine's when a request's
// variables hold one of these values (answers no GraphQL server should
// leak verbatim, and text that JSON encoders escape differently).
var upstreamAnswers = map[string]struct {
	status int
	body   string
}{
	`"upstream-500"`:    {500, `<html><body>Internal Server Error & <b>more</b></body></html>`},
	`"upstream-errors"`: {200, `{"data":null,"errors":[{"message":"boom <b>&</b>` + "\u2028" + ` next","extensions":{"code":"INTERNAL_ERROR","stack":"x"},"path":["book"]}]}`},
	`"upstream-markup"`: {200, `{"data":{"book":{"id":"<b>&amp;</b>","title":"A ` + "\u2028 B é \u003c" + `","author":null}}}`},
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	engine := library.NewHandler(library.NewCatalog(), library.NewLoanEvents(), library.Options{IdentitySecret: []byte(testSecret)})
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.calls.Add(1)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(body))
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		for marker, a := range upstreamAnswers {
			if bytes.Contains(body, []byte(marker)) {
				w.WriteHeader(a.status)
				_, _ = io.WriteString(w, a.body)
				return
			}
		}
		if bytes.Contains(body, []byte(`"upstream-slow"`)) { // answers only when the gateway gives up
			u.waiting.Add(1)
			<-r.Context().Done()
			u.waiting.Add(-1)
			u.canceled.Add(1)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		engine.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// gatewayConfig is what tests vary.
type gatewayConfig struct {
	mcpOptions string // extra lines in the civic_mcp block
	mcpFamily  string // civic_mcp's family lines (default: the guard's)
}

const guardFamilies = "family catalog books book authors\n\t\t\tfamily loans loans Mutation.borrowBook Mutation.returnBook Subscription.loanEvents"

type gateway struct {
	tester   *caddytest.Tester
	base     string
	keysFile string
	up       *upstream
}

// newGateway prepares a gateway (keys file, upstream); issue keys, then
// start it.
func newGateway(t *testing.T) *gateway {
	t.Helper()
	return &gateway{keysFile: filepath.Join(t.TempDir(), "keys.json"), up: newUpstream(t)}
}

// issue adds a key of tier to the keys file (a new organization each).
func (g *gateway) issue(t *testing.T, tier string) keystore.Issued {
	t.Helper()
	iss, err := keystore.IssueToFile(g.keysFile, "org-"+testenv.RandomSuffix(6), tier, "live")
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

func (g *gateway) start(t *testing.T, c gatewayConfig) *gateway {
	t.Helper()
	if c.mcpFamily == "" {
		c.mcpFamily = guardFamilies
	}
	port := testenv.FreePort(t)
	t.Setenv("CIVIC_MCP_TEST_KEYS", g.keysFile)
	t.Setenv("CIVIC_MCP_TEST_SECRET", testSecret)
	cfg := fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%[1]d
	http_port %[2]d
	grace_period 1ns
	auto_https off
	civic_auth {
		keys file {env.CIVIC_MCP_TEST_KEYS}
		environment live
		identity_secret {env.CIVIC_MCP_TEST_SECRET}
		tier reader 6000/m catalog
		tier partner 6000/m catalog loans
		tier tiny 3/m catalog
	}
}
http://localhost:%[2]d {
	# as routes.caddy: response headers with placeholders, applied when the SDK writes
	header {
		X-Request-Id {http.request.uuid}
		-Server
	}
	log_append key_id {civic.key_id}
	@graphql path /v1/graphql /v1/mcp
	handle @graphql {
		civic_auth
		civic_mcp /v1/mcp {
			tools %[3]s
			schema %[4]s
			%[5]s
			allowed_origins https://agent.example
			%[6]s
		}
		civic_rate_limit
		graphql_guard {
			schema %[4]s
			operations query mutation
			%[7]s
		}
		reverse_proxy %[8]s {
			rewrite /graphql
		}
	}
}
`, adminPort, port, libraryTools, librarySchema, c.mcpFamily, c.mcpOptions, guardFamilies, g.up.srv.Listener.Addr())
	g.tester = caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	g.tester.InitServer(cfg, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	g.base = fmt.Sprintf("http://localhost:%d", port)
	return g
}

// bearer sends every request with a key.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session with key through the SDK's client at
// revision 2025-11-25 (the SDK's default is 2026-07-28: modern_test.go);
// the standalone event stream only when opts asks for notifications.
func (g *gateway) connect(t *testing.T, key string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	cs, err := g.tryConnect(t, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (g *gateway) tryConnect(t *testing.T, key string, opts *mcpsdk.ClientOptions) (*mcpsdk.ClientSession, error) {
	t.Helper()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcpsdk.StreamableClientTransport{
		Endpoint: g.base + "/v1/mcp", HTTPClient: &http.Client{Transport: bearer{key}},
		DisableStandaloneSSE: opts == nil || opts.ToolListChangedHandler == nil, MaxRetries: -1,
	}, &mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// reply is a raw HTTP answer.
type reply struct {
	status int
	header http.Header
	body   string
}

// send makes a raw request to path with key ("" for none) and headers.
func (g *gateway) send(t *testing.T, method, path, key string, body []byte, hdr map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, g.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// mcpHeaders are what a Streamable HTTP client sends on a POST.
func mcpHeaders(session string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if session != "" {
		h["Mcp-Session-Id"] = session
		h["Mcp-Protocol-Version"] = "2025-11-25"
	}
	return h
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize opens a session with a raw POST and returns its id.
func (g *gateway) initialize(t *testing.T, key string, hdr map[string]string) string {
	t.Helper()
	h := mcpHeaders("")
	for k, v := range hdr {
		h[k] = v
	}
	r := g.send(t, http.MethodPost, "/v1/mcp", key, []byte(initializeBody), h)
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s %v", r.status, r.body, r.header)
	}
	return id
}

// graphql sends a GraphQL request to POST /v1/graphql and returns its data.
func (g *gateway) graphql(t *testing.T, key, query string, vars map[string]any) json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	r := g.send(t, http.MethodPost, "/v1/graphql", key, body, map[string]string{"Content-Type": "application/json"})
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []any           `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.body), &out); err != nil || r.status != http.StatusOK || len(out.Errors) > 0 {
		t.Fatalf("POST /v1/graphql: %d %s", r.status, r.body)
	}
	return out.Data
}

// scrape reads one sample of the admin endpoint's /metrics (0 if absent).
func (g *gateway) scrape(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			_, _ = fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// setTier moves key id to tier in the keys file, as an operator editing it
// would (atomically: a new file renamed over the old).
func (g *gateway) setTier(t *testing.T, id, tier string) {
	t.Helper()
	f, err := keystore.ReadFile(g.keysFile)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Keys {
		if f.Keys[i].ID == id {
			f.Keys[i].Tier = tier
		}
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.keysFile+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(g.keysFile+".new", g.keysFile); err != nil {
		t.Fatal(err)
	}
}

// toolNames lists the session's tools.
func toolNames(t *testing.T, cs *mcpsdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// callText calls a tool and returns its result and the text of its content.
func callText(t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) (*mcpsdk.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			text += tc.Text
		}
	}
	return res, text
}
