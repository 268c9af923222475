package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// anyBackend is the real civicgate binary (graphql_guard with subscriptions
// and APQ) in front of the real gqlgen library engine of
// examples/other-backend, served in this process on its own port and
// recorded. Each one has its own stack (database, Redis prefix, ports, data
// directory) and its own keys file.
type anyBackend struct {
	t        *testing.T
	s        *stack.Stack
	gw       *stack.Proc
	keysFile string
	Addr     string // 127.0.0.1:<port> of the gateway
	URL      string // http://<Addr>/graphql
	Events   *library.LoanEvents
	Up       *upstreamLog
	keys     []string
}

// upstreamLog is everything the engine received.
type upstreamLog struct {
	mu       sync.Mutex
	requests int
	bodies   bytes.Buffer // every request's headers and body, every operation
	ops      []string     // operations' query text, on every transport
}

func (u *upstreamLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		u.mu.Lock()
		u.requests++
		fmt.Fprintf(&u.bodies, "%s %s\n", r.Method, r.URL)
		_ = r.Header.Write(&u.bodies)
		u.bodies.Write(b)
		u.bodies.WriteByte('\n')
		u.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (u *upstreamLog) onOperation(_ context.Context, op *graphql.OperationContext) {
	b, _ := json.Marshal(op.Variables)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ops = append(u.ops, op.RawQuery)
	fmt.Fprintf(&u.bodies, "op %s %s %v\n", op.RawQuery, b, op.Extensions)
	_ = op.Headers.Write(&u.bodies)
}

func (u *upstreamLog) requestCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests
}

// opsWith counts the operations whose text contains s.
func (u *upstreamLog) opsWith(s string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, q := range u.ops {
		if strings.Contains(q, s) {
			n++
		}
	}
	return n
}

func (u *upstreamLog) saw(s string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Contains(u.bodies.String(), s)
}

var anyLiveKey = regexp.MustCompile(`cg_live_[0-9A-Za-z]+`)

// anyBackendCaddyfile is the guard of examples/other-backend/Caddyfile with
// the given graphql_guard options added.
const anyBackendCaddyfile = `{
	admin {$CIVICGATE_ADMIN}
	civic_auth {
		keys file {$ANY_KEYS_FILE}
		environment live
		identity_secret {env.CIVIC_IDENTITY_SECRET}
		tier partner 1000000/m catalog loans
		tier trickle 3/h catalog loans
		tier reader 1000000/m catalog
	}
}

http://{$ANY_ADDR} {
	route /graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			schema {$ANY_SCHEMA}
			limit_argument first
			max_depth 6
			operations query mutation subscription
			family catalog books book authors
			family loans loans Mutation.borrowBook Mutation.returnBook Subscription.loanEvents
%s
		}
		reverse_proxy {$ANY_UPSTREAM} {
			flush_interval -1
		}
	}
	handle_errors {
		header Content-Type application/json
		respond ` + "`" + `{"error":"{http.error.status_text}"}` + "`" + ` {http.error.status_code}
	}
}
`

// startAnyBackend starts the engine, issues one partner key per name in
// keys (returned in order) and starts the gateway with guardOptions.
func startAnyBackend(t *testing.T, guardOptions string, keys ...string) (*anyBackend, []string) {
	t.Helper()
	s := stack.New(t, &bins)
	a := &anyBackend{t: t, s: s, Up: &upstreamLog{}, Events: library.NewLoanEvents()}
	secret := []byte(s.Getenv("CIVIC_IDENTITY_SECRET"))
	engine := library.NewHandler(library.NewCatalog(), a.Events, library.Options{
		IdentitySecret: secret,
		KeepAlive:      time.Hour, // no graphql-transport-ws pings in the transcripts
		OnOperation:    a.Up.onOperation,
	})
	mux := http.NewServeMux()
	mux.Handle("/graphql", a.Up.wrap(engine))
	backend := httptest.NewServer(mux)
	t.Cleanup(backend.Close)

	a.Addr = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	a.URL = "http://" + a.Addr + "/graphql"
	a.keysFile = filepath.Join(s.Dir, "keys.json")
	s.Setenv("ANY_ADDR", a.Addr)
	s.Setenv("ANY_KEYS_FILE", a.keysFile)
	s.Setenv("ANY_UPSTREAM", strings.TrimPrefix(backend.URL, "http://"))
	s.Setenv("ANY_SCHEMA", filepath.Join(s.Root, "examples", "other-backend", "library.graphqls"))
	var issued []string
	for _, tier := range keys {
		out := s.Run(bins.Civicgate, "keys", "issue", "--org", "org-"+tier+"-"+testenv.RandomSuffix(6), "--tier", tier, "--env", "live", "--file", a.keysFile)
		k := anyLiveKey.FindString(out)
		if k == "" {
			t.Fatal("keys issue printed no key")
		}
		issued = append(issued, k)
	}
	a.keys = issued
	cf := filepath.Join(s.Dir, "Caddyfile")
	if err := os.WriteFile(cf, []byte(fmt.Sprintf(anyBackendCaddyfile, guardOptions)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.gw = s.SpawnProc("civicgate", bins.Civicgate, "run", "--config", cf, "--adapter", "caddyfile")
	stack.WaitFor(t, 60*time.Second, "any-backend gateway", func() error {
		if a.gw.Exited() {
			t.Fatalf("civicgate exited while starting; log %s", a.gw.Log)
		}
		resp, err := http.Post(a.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	t.Cleanup(func() {
		for _, k := range a.keys {
			if a.Up.saw(k) {
				t.Errorf("the engine received a key (%s…)", k[:12])
			}
		}
		a.s.CheckLogs(t, a.keys...)
	})
	return a, issued
}

// heapMetric is the gateway's Go heap in use: under -race its RSS also
// holds the race detector's shadow memory, which grows with any traffic.
const heapMetric = "go_memstats_heap_inuse_bytes"

// metric reads one gateway metric.
func (a *anyBackend) metric(name string) float64 {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := a.s.GatewayMetric(ctx, name)
	if err != nil {
		a.t.Fatalf("%s: %v", name, err)
	}
	return v
}

// alive fails unless the gateway process runs and answers.
func (a *anyBackend) alive(key string) {
	a.t.Helper()
	if a.gw.Exited() {
		a.t.Fatalf("civicgate exited; log %s", a.gw.Log)
	}
	st, body := a.post(key, `{"query":"{ book(id:\"b1\") { title } }"}`)
	if st != 200 || !strings.Contains(body, "Middlemarch") {
		a.t.Fatalf("gateway after the abuse: %d %s", st, body)
	}
}

// post sends one GraphQL POST.
func (a *anyBackend) post(key, body string) (int, string) {
	a.t.Helper()
	st, b, _, err := doRequest(http.DefaultClient, http.MethodPost, a.URL, key, body)
	if err != nil {
		a.t.Fatal(err)
	}
	return st, b
}

func doRequest(c *http.Client, method, url, key, body string) (int, string, http.Header, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), resp.Header, err
}
