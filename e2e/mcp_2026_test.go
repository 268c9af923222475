package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestMCP2026TwoGateways drives MCP revision 2026-07-28 (docs/mcp.md
// "Revision 2026-07-28: no sessions", docs/design.md D80) through two
// gateways on one database and one Redis, every request to the other
// gateway than the last (no affinity), with the go-sdk's client at its
// default revision and the official TypeScript client 2.4.0 pinned to
// 2026-07-28 and in auto mode (e2e/mcp-node2026): each tier lists its tools, every call equals the same
// operation over POST /v1/graphql, no session is opened anywhere, and a
// configuration reload of one gateway amid a stream of calls loses none.
func TestMCP2026TwoGateways(t *testing.T) {
	f := startFleet(t, 2, "redis://"+testenv.RedisAddr()+"/0")
	a := f.gateways[0]
	ops := shippedManifest(t, a.Root)
	free, _ := a.IssueKey("mcp26free", "free", "live")
	paid, _ := a.IssueKey("mcp26paid", "paid_beta", "live")
	secrets := []string{free, paid}
	defer func() {
		for _, s := range f.gateways {
			s.CheckLogs(t, secrets...)
		}
	}()

	alt := map[string]*alternating{}
	for tier, key := range map[string]string{"free": free, "paid_beta": paid} {
		cs, x := connect2026(t, f.gateways, key)
		alt[tier] = x
		if cs.ID() != "" {
			t.Errorf("%s: a 2026-07-28 client holds session %q", tier, cs.ID())
		}
		if got, want := mcpToolNames(t, cs), toolsOfTier(t, a.Root, tier); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", tier, got, want)
		}
		for first := 1; first <= 4; first++ {
			args := map[string]any{"first": first}
			got := mcpData(t, cs, "search_bills", args)
			if want := graphqlOp(t, a, key, ops["SearchBills"], args); !sameJSON(got, want) {
				t.Errorf("%s search_bills %v: %s\nPOST /v1/graphql: %s", tier, args, got, want)
			}
		}
		x.mu.Lock()
		if x.served[0] == 0 || x.served[1] == 0 {
			t.Errorf("%s: requests per gateway %v, want both", tier, x.served)
		}
		x.mu.Unlock()
	}
	for i, s := range f.gateways {
		if n := gatewaySample(t, s, "civicgate_mcp_sessions_opened_total"); n != 0 {
			t.Errorf("gateway %d opened %v sessions", i, n)
		}
	}

	t.Run("TypeScriptClient", func(t *testing.T) {
		dir := node2026Client(t)
		ca := filepath.Join(t.TempDir(), "roots.pem")
		var roots []byte
		for _, s := range f.gateways {
			pem, err := os.ReadFile(s.CARoot)
			if err != nil {
				t.Fatal(err)
			}
			roots = append(roots, pem...)
		}
		if err := os.WriteFile(ca, roots, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ tier, key, mode string }{
			{"free", free, "pin"}, {"paid_beta", paid, "pin"}, {"paid_beta", paid, "auto"},
		} {
			args := map[string]any{"first": 2}
			out := runNode2026(t, f.gateways, dir, ca, c.key, c.mode, "search_bills", args)
			if out.ProtocolVersion != "2026-07-28" || out.Session {
				t.Errorf("%s %s: protocol %q, session %v: want 2026-07-28 without a session", c.tier, c.mode, out.ProtocolVersion, out.Session)
			}
			if want := toolsOfTier(t, a.Root, c.tier); !slices.Equal(out.Tools, want) {
				t.Errorf("%s %s lists %v, want %v", c.tier, c.mode, out.Tools, want)
			}
			if len(out.Served) != 2 || out.Served[0] == 0 || out.Served[1] == 0 {
				t.Errorf("%s %s: requests per gateway %v, want both", c.tier, c.mode, out.Served)
			}
			want := graphqlOp(t, a, c.key, ops["SearchBills"], args)
			for i, call := range out.Calls {
				if call.IsError || !sameJSON(call.StructuredContent, want) {
					t.Errorf("%s %s call %d: %s, want %s", c.tier, c.mode, i, call.StructuredContent, want)
				}
			}
		}
	})

	// A reload of the first gateway amid a stream of calls alternating
	// between both: every call answered.
	// enterprise (1000/m): the stream stays within the key's rate.
	ent, _ := a.IssueKey("mcp26enterprise", "enterprise", "live")
	secrets = append(secrets, ent)
	cs, _ := connect2026(t, f.gateways, ent)
	stop := make(chan struct{})
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if calls.Load() >= 600 {
				return
			}
			res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "list_members", Arguments: map[string]any{"first": 1}})
			calls.Add(1)
			if err != nil || res.IsError {
				failed.Add(1)
				t.Errorf("a call during the reload: %v %v", err, res)
			}
		}
	})
	before := calls.Load()
	a.Run(bins.Civicgate, "reload", "--config", "caddyfile/Caddyfile.local", "--adapter", "caddyfile", "--address", a.Getenv("CIVICGATE_ADMIN"))
	during := calls.Load() - before
	close(stop)
	wg.Wait()
	t.Logf("%d calls, %d while the reload ran, %d failed", calls.Load(), during, failed.Load())
	if calls.Load() == 0 {
		t.Error("no call ran")
	}
}

// alternating sends each request to the next gateway in turn, with a key.
type alternating struct {
	key      string
	gateways []*stack.Stack
	mu       sync.Mutex
	n        int
	served   []int
}

func (x *alternating) RoundTrip(r *http.Request) (*http.Response, error) {
	x.mu.Lock()
	i := x.n % len(x.gateways)
	x.n++
	x.served[i]++
	x.mu.Unlock()
	g := x.gateways[i]
	u, err := url.Parse(g.HTTPSURL)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	r.Header.Set("Authorization", "Bearer "+x.key)
	return g.Client.Transport.RoundTrip(r)
}

// connect2026 connects the go-sdk's client at its default revision
// (2026-07-28) through the gateways in turn.
func connect2026(t *testing.T, gateways []*stack.Stack, key string) (*mcpsdk.ClientSession, *alternating) {
	t.Helper()
	x := &alternating{key: key, gateways: gateways, served: make([]int, len(gateways))}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "civicgate-e2e-2026", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcpsdk.StreamableClientTransport{
		Endpoint:   gateways[0].HTTPSURL + mcpPath,
		HTTPClient: &http.Client{Transport: x},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("MCP 2026-07-28 through two gateways: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, x
}

// node2026Output is what e2e/mcp-node2026/client.mjs prints.
type node2026Output struct {
	ProtocolVersion string   `json:"protocolVersion"`
	Session         bool     `json:"session"`
	Served          []int    `json:"served"`
	Tools           []string `json:"tools"`
	Calls           []struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	} `json:"calls"`
}

// node2026Client copies e2e/mcp-node2026 into a directory of the test's own
// and installs the locked @modelcontextprotocol/client 2.4.0 with npm ci
// (npm failing fails the test, never skips it).
func node2026Client(t *testing.T) string {
	t.Helper()
	return npmInstall(t, "mcp-node2026", "the pinned @modelcontextprotocol/client")
}

// runNode2026 runs client.mjs against the gateways in turn with key, mode
// (pin or auto), one tool and its arguments.
func runNode2026(t *testing.T, gateways []*stack.Stack, dir, ca, key, mode, tool string, args map[string]any) node2026Output {
	t.Helper()
	argsJSON, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, s := range gateways {
		urls = append(urls, s.HTTPSURL+mcpPath)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", strings.Join(urls, ","), key, mode, tool, string(argsJSON))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs %s %s: %v\n%s", mode, tool, err, stderr.String())
	}
	if bytes.Contains(stdout.Bytes(), []byte(key)) || bytes.Contains(stderr.Bytes(), []byte(key)) {
		t.Errorf("client.mjs printed the key")
	}
	var out node2026Output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client.mjs output is not its JSON: %v\n%s", err, stdout.String())
	}
	return out
}

// TestMCP2026ListenRevokedEverywhere: a subscriptions/listen stream of one
// key on each of two gateways ends within 2 s of `keys revoke` run against
// the first, with no request of the key anywhere in between: the key
// store's notification reaches each gateway's credential watch
// (docs/design.md D80).
func TestMCP2026ListenRevokedEverywhere(t *testing.T) {
	f := startFleet(t, 2, "redis://"+testenv.RedisAddr()+"/0")
	a := f.gateways[0]
	key, id := a.IssueKey("mcp26listen", "free", "live")
	defer func() {
		for _, s := range f.gateways {
			s.CheckLogs(t, key)
		}
	}()
	ended := make(chan time.Time, len(f.gateways))
	for _, s := range f.gateways {
		sc := openListen(t, s, key)
		go func() {
			for sc.Scan() {
			}
			ended <- time.Now()
		}()
	}
	// The 2 s run from when the command returned, its change committed (the
	// command's own start, a process under -race, is not the gateways' delay);
	// a stream that ended before that counts as 0.
	a.Run(a.Bins.Civicgate, "keys", "revoke", id)
	revoked := time.Now()
	for i := range f.gateways {
		select {
		case at := <-ended:
			d := at.Sub(revoked)
			if d > 2*time.Second {
				t.Errorf("a stream ended %v after the revocation, want within 2 s", d)
			}
			t.Logf("a stream ended %v after keys revoke returned", d)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d streams still open 10 s after the revocation", len(f.gateways)-i, len(f.gateways))
		}
	}
}
