package wsproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// tickSchema is a hand-written gqlgen ExecutableSchema (no codegen):
// subscription { ticks(n: N) } sends N next messages and completes; N = 0
// never ends until the client completes it or leaves.
type tickSchema struct{ schema *ast.Schema }

func newTickSchema() *tickSchema {
	return &tickSchema{schema: gqlparser.MustLoadSchema(&ast.Source{Name: "ticks.graphqls", Input: `
type Query { ok: Boolean }
type Subscription { ticks(n: Int!): Int! }
`})}
}

func (s *tickSchema) Schema() *ast.Schema { return s.schema }

func (s *tickSchema) Complexity(context.Context, string, string, int, map[string]any) (int, bool) {
	return 1, false
}

func (s *tickSchema) Exec(ctx context.Context) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx)
	if op.Operation.Operation != ast.Subscription {
		return graphql.OneShot(&graphql.Response{Data: []byte(`{"ok":true}`)})
	}
	field := op.Operation.SelectionSet[0].(*ast.Field)
	n, _ := field.ArgumentMap(op.Variables)["n"].(int64)
	sent := int64(0)
	return func(ctx context.Context) *graphql.Response {
		if n == 0 {
			<-ctx.Done()
			return nil
		}
		if sent == n {
			return nil
		}
		sent++
		return &graphql.Response{Data: []byte(`{"ticks":` + strconv.FormatInt(sent, 10) + `}`)}
	}
}

// startUpstream runs a real gqlgen graphql-transport-ws server.
func startUpstream(t *testing.T) string {
	t.Helper()
	srv := handler.New(newTickSchema())
	srv.AddTransport(transport.Websocket{})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

// TestMain loads an empty Caddy config (admin off) so that reverse_proxy
// handlers can be provisioned against its context.
func TestMain(m *testing.M) {
	if err := caddy.Load([]byte(`{"admin":{"disabled":true}}`), true); err != nil {
		fmt.Fprintln(os.Stderr, "loading an empty caddy config:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = caddy.Stop()
	os.Exit(code)
}

// proxy is an http.Server that, like graphql_guard, wraps the
// ResponseWriter with WrapResponseWriter and hands the request to a real,
// provisioned Caddy reverse_proxy handler.
type proxy struct {
	addr string
	cfg  func() Config
}

func startProxy(t *testing.T, upstream string, cfg func() Config) *proxy {
	t.Helper()
	cctx, cancel := caddy.NewContext(caddy.ActiveContext())
	t.Cleanup(cancel)
	rp := &reverseproxy.Handler{Upstreams: reverseproxy.UpstreamPool{{Dial: upstream}}}
	if err := rp.Provision(cctx); err != nil {
		t.Fatalf("provisioning reverse_proxy: %v", err)
	}
	t.Cleanup(func() { _ = rp.Cleanup() })
	p := &proxy{cfg: cfg}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repl := caddy.NewReplacer()
		r = caddyhttp.PrepareRequest(r, repl, w, &caddyhttp.Server{})
		if IsUpgrade(r) && Offers(r) {
			w = WrapResponseWriter(w, r, p.cfg())
		}
		if err := rp.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
			t.Logf("reverse_proxy: %v", err)
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	p.addr = ln.Addr().String()
	return p
}

// countingSlots is a Slots bounded at limit that counts what is held and
// lets a test await a count.
type countingSlots struct {
	mu      sync.Mutex
	changed sync.Cond
	limit   int
	held    int
}

func newCountingSlots(limit int) *countingSlots {
	s := &countingSlots{limit: limit}
	s.changed.L = &s.mu
	return s
}

func (s *countingSlots) Acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == s.limit {
		return false
	}
	s.held++
	s.changed.Broadcast()
	return true
}

func (s *countingSlots) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == 0 {
		panic("slot released more often than acquired")
	}
	s.held--
	s.changed.Broadcast()
}

// await waits until held == n (the test's deadline bounds the wait).
func (s *countingSlots) await(t *testing.T, n int) {
	t.Helper()
	timer := time.AfterFunc(10*time.Second, func() {
		s.mu.Lock()
		s.limit = -1 // marks the timeout
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.held != n && s.limit != -1 {
		s.changed.Wait()
	}
	if s.held != n {
		t.Fatalf("slots held %d, want %d", s.held, n)
	}
}

// policyChecker refuses queries naming "forbidden" and resolves the
// persisted query {"extensions":{"persisted":"ticks3"}}. Each admitted
// subscription's failed adds to failed (docs/design.md D83).
type policyChecker struct{ admitted, failed atomic.Int64 }

func (c *policyChecker) CheckSubscribe(_ context.Context, payload []byte) ([]byte, []byte, func()) {
	s := string(payload)
	failed := func() { c.failed.Add(1) }
	switch {
	case strings.Contains(s, "forbidden"):
		return nil, []byte(`[{"message":"Forbidden field","extensions":{"code":"FORBIDDEN"}}]`), nil
	case strings.Contains(s, `"persisted":"ticks3"`):
		c.admitted.Add(1)
		return []byte(`{"query":"subscription { ticks(n: 3) }"}`), nil, failed
	}
	c.admitted.Add(1)
	return payload, nil, failed
}
