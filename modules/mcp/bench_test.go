package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// The in-process chain of the benchmarks: a provisioned Caddy server whose
// ServeHTTP is called directly (no listener, no client), one handle for
// /v1/graphql and /v1/mcp as in the shipped routes — civic_auth, civic_mcp
// (/v1/mcp only), civic_rate_limit (memory, never reached), graphql_guard,
// and a fixed GraphQL answer in place of the upstream. POST /v1/graphql and
// tools/call of the same operation differ only by what civic_mcp and the
// SDK add.

const benchAnswer = `{"data":{"book":{"id":"b1","title":"Middlemarch","author":{"id":"a1","name":"George Eliot"}}}}`

type chain struct {
	srv       *caddyhttp.Server
	key       string
	readerKey string // a tier of catalog alone
	tinyKey   string // a tier of 1/h: over its rate after one call
}

func startChain(tb testing.TB, maxSessions int) *chain {
	tb.Helper()
	keysFile := filepath.Join(tb.TempDir(), "keys.json")
	iss, err := keystore.IssueToFile(keysFile, "bench", "bench", "live")
	if err != nil {
		tb.Fatal(err)
	}
	reader, err := keystore.IssueToFile(keysFile, "benchreader", "benchreader", "live")
	if err != nil {
		tb.Fatal(err)
	}
	tiny, err := keystore.IssueToFile(keysFile, "benchtiny", "benchtiny", "live")
	if err != nil {
		tb.Fatal(err)
	}
	port := testenv.FreePort(tb)
	cfg := fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%[1]d
	http_port %[2]d
	grace_period 1ns
	auto_https off
	civic_auth {
		keys file %[3]q
		environment live
		identity_secret %[4]q
		tier bench 1000000000/h catalog loans
		tier benchreader 1000000000/h catalog
		tier benchtiny 1/h catalog
	}
}
http://localhost:%[2]d {
	@graphql path /v1/graphql /v1/mcp
	handle @graphql {
		civic_auth
		civic_mcp /v1/mcp {
			tools %[5]s
			schema %[6]s
			%[7]s
			max_sessions_per_key %[8]d
			max_sessions %[8]d
			message_rate 1000000000/h
		}
		civic_rate_limit
		graphql_guard {
			schema %[6]s
			operations query mutation
			%[7]s
		}
		respond `+"`"+benchAnswer+"`"+` 200
	}
}
`, adminPort, port, keysFile, testSecret, libraryTools, librarySchema, guardFamilies, maxSessions)
	caddytest.NewTester(tb).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")
	// The loaded configuration becomes the active context after the admin
	// API answered the load: until then ActiveContext is the zero Context.
	var app any
	testenv.Eventually(tb, 10*time.Second, "the chain's configuration is active", func() error {
		ctx := caddy.ActiveContext()
		if ctx.Context == nil {
			return errors.New("no active configuration")
		}
		var err error
		app, err = ctx.App("http")
		return err
	})
	for _, s := range app.(*caddyhttp.App).Servers {
		return &chain{srv: s, key: iss.Key, readerKey: reader.Key, tinyKey: tiny.Key}
	}
	tb.Fatal("no server")
	return nil
}

// recorder is a ResponseWriter kept for the next request; the SDK writes
// to it from its own goroutine while ServeHTTP waits for the answer.
type recorder struct {
	mu     sync.Mutex
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.h }
func (w *recorder) WriteHeader(s int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = s
	}
}
func (w *recorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
func (w *recorder) Flush() {}

func (w *recorder) reset() {
	clear(w.h)
	w.status = 0
	w.body.Reset()
}

// serve sends one POST to path through the server.
func (c *chain) serve(w *recorder, path, session string, body []byte) int {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Host = "localhost" // the site's host matcher
	r.Header["Content-Type"] = []string{"application/json"}
	r.Header["Authorization"] = []string{"Bearer " + c.key}
	if path == "/v1/mcp" {
		r.Header["Accept"] = []string{"application/json, text/event-stream"}
		if session != "" {
			r.Header["Mcp-Session-Id"] = []string{session}
			r.Header["Mcp-Protocol-Version"] = []string{"2025-11-25"}
		}
	}
	w.reset()
	c.srv.ServeHTTP(w, r)
	return w.status
}

// modern makes r a 2026-07-28 POST of method (and name) with key.
func (c *chain) modern(r *http.Request, key, method, name string) {
	r.Host = "localhost"
	r.Header["Content-Type"] = []string{"application/json"}
	r.Header["Authorization"] = []string{"Bearer " + key}
	r.Header["Accept"] = []string{"application/json, text/event-stream"}
	r.Header["Mcp-Protocol-Version"] = []string{versionModern}
	r.Header["Mcp-Method"] = []string{method}
	if name != "" {
		r.Header["Mcp-Name"] = []string{name}
	}
}

// open initializes a session and returns its id.
func (c *chain) open(tb testing.TB, w *recorder) string {
	tb.Helper()
	if s := c.serve(w, "/v1/mcp", "", []byte(initializeBody)); s != http.StatusOK {
		tb.Fatalf("initialize: %d %s", s, w.body.String())
	}
	id := w.h.Get("Mcp-Session-Id")
	if s := c.serve(w, "/v1/mcp", id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); s != http.StatusAccepted {
		tb.Fatalf("initialized: %d %s", s, w.body.String())
	}
	return id
}

var (
	graphqlBody  = []byte(`{"query":"query GetBook($id: ID!) {\n  book(id: $id) {\n    id\n    title\n    author {\n      id\n      name\n    }\n  }\n}","operationName":"GetBook","variables":{"id":"b1"}}`)
	toolCallBody = []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"}}}`)
)

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run is the benchmark loop; it reports CPU time per request besides
// wall time (the SDK answers from another goroutine).
func run(b *testing.B, do func() int) {
	b.Helper()
	for range 20 { // key cached, document compiled
		if s := do(); s != http.StatusOK {
			b.Fatalf("status %d", s)
		}
	}
	b.ReportAllocs()
	cpu := cpuTime()
	n := 0
	for b.Loop() {
		if s := do(); s != http.StatusOK {
			b.Fatalf("status %d", s)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(n), "cpu-ns/op")
}

// BenchmarkGraphQLPost: GetBook as POST /v1/graphql through the chain.
//
//	go test -run '^$' -bench 'GraphQLPost|ToolsCall' -benchmem -benchtime 3s -count 3 ./modules/mcp/
func BenchmarkGraphQLPost(b *testing.B) {
	c := startChain(b, 10)
	w := &recorder{h: http.Header{}}
	run(b, func() int {
		s := c.serve(w, "/v1/graphql", "", graphqlBody)
		if s == http.StatusOK && w.body.String() != benchAnswer {
			b.Fatalf("answer %s", w.body.String())
		}
		return s
	})
}

// BenchmarkToolsCall: the same operation as tools/call get_book in an open
// session through the same chain, answered by civic_mcp (fastcall.go;
// target: at most 50 µs of CPU more).
func BenchmarkToolsCall(b *testing.B) { benchToolsCall(b) }

// BenchmarkToolsCallThroughSDK: the same call answered by the SDK, as
// every tools/call was before fastcall.go (and as an unusual one still is).
func BenchmarkToolsCallThroughSDK(b *testing.B) {
	sdkAnswersCalls.Store(true)
	defer sdkAnswersCalls.Store(false)
	benchToolsCall(b)
}

func benchToolsCall(b *testing.B) {
	c := startChain(b, 10)
	w := &recorder{h: http.Header{}}
	sid := c.open(b, w)
	run(b, func() int {
		s := c.serve(w, "/v1/mcp", sid, toolCallBody)
		if s == http.StatusOK && !strings.Contains(w.body.String(), `"structuredContent":{"book":{"id":"b1"`) {
			b.Fatalf("answer %s", w.body.String())
		}
		return s
	})
}

// modernCallBody is toolCallBody in revision 2026-07-28.
var modernCallBody = []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_book","arguments":{"id":"b1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)

// BenchmarkModernToolsCall: the same call in revision 2026-07-28, no
// session (modern.go; target: no more CPU than BenchmarkToolsCall).
func BenchmarkModernToolsCall(b *testing.B) {
	c := startChain(b, 10)
	w := &recorder{h: http.Header{}}
	run(b, func() int {
		r := httptest.NewRequest(http.MethodPost, "/v1/mcp", bytes.NewReader(modernCallBody))
		c.modern(r, c.key, "tools/call", "get_book")
		w.reset()
		c.srv.ServeHTTP(w, r)
		if w.status == http.StatusOK && !strings.Contains(w.body.String(), `"structuredContent":{"book":{"id":"b1"`) {
			b.Fatalf("answer %s", w.body.String())
		}
		return w.status
	})
}

// BenchmarkModernOverRate: a 2026-07-28 call over the key's API rate,
// refused by civic_rate_limit before the body is read (moderncall.go).
func BenchmarkModernOverRate(b *testing.B) {
	benchModernRefusal(b, func(c *chain) string { return c.tinyKey }, "get_book", http.StatusTooManyRequests)
}

// BenchmarkModernRefusedFromHeaders: a 2026-07-28 call of a tool the tier
// lacks, refused from Mcp-Name before the body is read (target: 5 µs).
func BenchmarkModernRefusedFromHeaders(b *testing.B) {
	benchModernRefusal(b, func(c *chain) string { return c.readerKey }, "member_loans", http.StatusForbidden)
}

// benchModernRefusal times a 2026-07-28 tools/call of tool with the key
// keyOf picks, through the whole chain, which must refuse it with status.
func benchModernRefusal(b *testing.B, keyOf func(*chain) string, tool string, status int) {
	c := startChain(b, 10)
	w := &recorder{h: http.Header{}}
	run(b, func() int {
		r := httptest.NewRequest(http.MethodPost, "/v1/mcp", bytes.NewReader(modernCallBody))
		c.modern(r, keyOf(c), "tools/call", tool)
		w.reset()
		c.srv.ServeHTTP(w, r)
		if w.status == status {
			return http.StatusOK
		}
		return w.status
	})
}

// BenchmarkSDKToolsCall is the floor under BenchmarkToolsCall: the go-sdk's
// StreamableHTTPHandler alone answering tools/call in an open session with
// a handler that returns the answer, no Caddy, no chain.
func BenchmarkSDKToolsCall(b *testing.B) {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "floor", Version: "1"}, nil)
	srv.AddTool(&mcpsdk.Tool{Name: "get_book", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: benchAnswer}}, StructuredContent: json.RawMessage(benchAnswer)}, nil
		})
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, &mcpsdk.StreamableHTTPOptions{DisableLocalhostProtection: true})
	w := &recorder{h: http.Header{}}
	do := func(sid string, body []byte) int {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header["Content-Type"] = []string{"application/json"}
		r.Header["Accept"] = []string{"application/json, text/event-stream"}
		if sid != "" {
			r.Header["Mcp-Session-Id"] = []string{sid}
			r.Header["Mcp-Protocol-Version"] = []string{"2025-11-25"}
		}
		w.reset()
		h.ServeHTTP(w, r)
		return w.status
	}
	do("", []byte(initializeBody))
	sid := w.h.Get("Mcp-Session-Id")
	do(sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	run(b, func() int { return do(sid, toolCallBody) })
}

// TestIdleSessionMemory opens 1000 sessions (initialize, initialized) and
// measures what the gateway holds per idle session: heap and goroutine
// stacks after a GC (docs/mcp.md "Limits": the target is 32 KiB).
func TestIdleSessionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1000 sessions")
	}
	const n = 1000
	c := startChain(t, n+10)
	w := &recorder{h: http.Header{}}
	c.open(t, w) // warm: key cached, first-use allocations made
	before := heldMemory()
	goroutines := runtime.NumGoroutine()
	for range n {
		c.open(t, w)
	}
	after := heldMemory()
	per := float64(after-before) / n
	t.Logf("%d idle sessions: %.1f KiB each (heap and stacks), %.2f goroutines each",
		n, per/1024, float64(runtime.NumGoroutine()-goroutines)/n)
	if per > 32<<10 {
		t.Errorf("%.1f KiB per idle session, over the 32 KiB target", per/1024)
	}
}

// heldMemory is the heap in use and the goroutine stacks after a GC.
func heldMemory() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}
