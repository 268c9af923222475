package gqlcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// adminPort is this package's caddytest admin port (one per package).
const adminPort = 2998

// guardStandIn publishes what graphql_guard and civic_auth publish, from
// request headers, so that the cache can be tested as it runs behind them
// without a schema or a key store: the decoded request
// (contract.GraphQLRequest) of a JSON body's members with its operation
// from X-Op (type), X-Op-Name, X-Doc (document hash) and X-Families
// (comma-separated), unless X-Undecoded is set or X-Op is not (X-Aliased marks it
// Aliased); and the placeholders X-Caller ({civic.families}) and X-Org
// ({civic.org}) that scopes read. (The real guard in front of the cache:
// keying_test.go.)
type guardStandIn struct{}

func (guardStandIn) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.test_guard_stand_in", New: func() caddy.Module { return new(guardStandIn) }}
}

func (guardStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	for hdr, name := range map[string]string{"X-Caller": contract.CivicFamilies, "X-Org": contract.CivicOrg} {
		if v, ok := r.Header[hdr]; ok {
			repl.Set(name, v[0])
		}
	}
	if r.Header.Get("X-Undecoded") != "" || r.Header.Get("X-Op") == "" {
		return next.ServeHTTP(w, r) // the guard publishes only what it admitted, with its type
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var members map[string]json.RawMessage
	_ = json.Unmarshal(body, &members)
	req := contract.GraphQLRequest{Query: members["query"], Variables: members["variables"], Extensions: members["extensions"],
		Aliased:   r.Header.Get("X-Aliased") != "",
		Operation: contract.GraphQLOperation{Type: r.Header.Get("X-Op"), Name: r.Header.Get("X-Op-Name"), DocumentHash: r.Header.Get("X-Doc")}}
	if fams := r.Header.Get("X-Families"); fams != "" {
		req.Operation.Families = strings.Split(fams, ",")
	}
	r, q := contract.AttachRequest(r)
	q.SetGraphQL(req)
	return next.ServeHTTP(w, r)
}

func init() {
	caddy.RegisterModule(guardStandIn{})
	httpcaddyfile.RegisterHandlerDirective("test_guard_stand_in", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		h.Next()
		return guardStandIn{}, nil
	})
}

// upstream is the backend: it answers JSON naming the request and the
// current version of the data, counts requests, and follows instructions
// in request headers (X-Up-*: response headers to send; X-Up-Body: the
// body; X-Up-Block: wait for release).
type upstream struct {
	srv     *httptest.Server
	calls   atomic.Int64
	version atomic.Int64
	mu      sync.Mutex
	release chan struct{} // X-Up-Block waits for it to close
	arrived chan struct{} // gets a value when a blocking request arrives
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{release: make(chan struct{}), arrived: make(chan struct{}, 64)}
	u.version.Store(1)
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	version := u.version.Load() // the data as read now, before any wait
	if r.Header.Get("X-Up-Block") != "" {
		u.mu.Lock()
		release := u.release
		u.mu.Unlock()
		u.arrived <- struct{}{}
		<-release
	}
	for name, vals := range r.Header {
		if h, ok := strings.CutPrefix(name, "X-Up-"); ok && h != "Body" && h != "Block" && h != "Status" {
			w.Header()[http.CanonicalHeaderKey(h)] = vals
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	status := http.StatusOK
	if r.Header.Get("X-Up-Status") != "" {
		_, _ = fmt.Sscan(r.Header.Get("X-Up-Status"), &status)
	}
	w.WriteHeader(status)
	if b := r.Header.Get("X-Up-Body"); b != "" {
		_, _ = io.WriteString(w, b)
		return
	}
	_, _ = fmt.Fprintf(w, `{"data":{"version":%d,"path":%q,"body":%q}}`, version, r.URL.RequestURI(), body)
}

type gateway struct {
	cfg    string
	tester *caddytest.Tester
	base   string
	up     *upstream
}

// startGateway runs Caddy with the global graphql_cache block global ("":
// none) and a site whose / route is the guard stand-in, a graphql_cache
// with opts, and the upstream; /bills is a plain GET route tagged bills.
func startGateway(t *testing.T, global, opts string) *gateway {
	t.Helper()
	up := newUpstream(t)
	port := testenv.FreePort(t)
	if global != "" {
		global = "graphql_cache {\n" + global + "\n}"
	}
	cfg := fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%d
	http_port %d
	grace_period 1ns
	auto_https off
	%s
}
http://localhost:%d {
	route /bills* {
		graphql_cache {
			tags bills
		}
		reverse_proxy %s
	}
	route {
		header X-Cache-Outcome {graphql.cache} {
			defer
		}
		test_guard_stand_in
		graphql_cache {
			%s
		}
		reverse_proxy %s
	}
}
`, adminPort, port, global, port, up.srv.Listener.Addr(), opts, up.srv.Listener.Addr())
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	tester.InitServer(cfg, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	// A reload with the same app configuration keeps the store (as it
	// should): start each test empty.
	liveInstance(t).store.flush()
	return &gateway{cfg: cfg, tester: tester, base: fmt.Sprintf("http://localhost:%d", port), up: up}
}

// answer is what a test compares of a response.
type answer struct {
	status                        int
	ctype, body                   string
	cacheStatus, age, outcome, sk string
}

// query sends a GraphQL request: hdr holds the guard stand-in's and the
// upstream's instructions (X-Op defaults to query, X-Doc to doc1,
// X-Families to bills, X-Caller to bills).
func (g *gateway) query(t *testing.T, body string, hdr map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.base+"/graphql", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range map[string]string{"X-Op": "query", "X-Doc": "doc1", "X-Families": "bills", "X-Caller": "bills"} {
		req.Header.Set(k, v)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return g.do(t, req)
}

func (g *gateway) get(t *testing.T, path string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g.do(t, req)
}

func (g *gateway) do(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := g.tester.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b), resp.Header.Get("Cache-Status"),
		resp.Header.Get("Age"), resp.Header.Get("X-Cache-Outcome"), resp.Header.Get("Surrogate-Key")}
}

// admin posts body to the admin API's purge route.
func (g *gateway) purge(t *testing.T, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(fmt.Sprintf("http://localhost:%d/graphql-cache/purge", adminPort), "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var apiErr struct{ Error string }
	if resp.StatusCode != http.StatusOK && json.Unmarshal(b, &apiErr) == nil {
		return resp.StatusCode, apiErr.Error
	}
	return resp.StatusCode, string(b)
}

// liveInstance is the cache instance of the running configuration.
func liveInstance(t *testing.T) *instance {
	t.Helper()
	var found []*instance
	instances.Range(func(_, v any) bool {
		found = append(found, v.(*instance))
		return true
	})
	if len(found) != 1 {
		t.Fatalf("%d live cache instances, want 1", len(found))
	}
	return found[0]
}

// await waits until cond holds, re-checking it at every listener or flight
// event of in, for at most 10 s.
func await(t *testing.T, in *instance, what string, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		changed := in.changes()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

func wantAnswer(t *testing.T, got, want answer) {
	t.Helper()
	if got != want {
		t.Fatalf("\n got %+v\nwant %+v", got, want)
	}
}

// reload loads the same configuration again, as `caddy reload` does.
func (g *gateway) reload(t *testing.T) {
	t.Helper()
	g.tester.InitServer(g.cfg, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	g.tester.Client.CloseIdleConnections()
}

// withDecoded returns ctx carrying a request value with g in its GraphQL
// slot, as graphql_guard leaves it for the cache.
func withDecoded(ctx context.Context, g contract.GraphQLRequest) context.Context {
	var q contract.Request
	q.SetGraphQL(g)
	return contract.WithRequest(ctx, q)
}
