package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestMCP2026TwoGateways drives MCP revision 2026-07-28 (docs/mcp.md
// "Revision 2026-07-28: no sessions", docs/design.md D80) through two
// gateways on one database and one Redis, every request to the other
// gateway than the last (no affinity), with the go-sdk's client at its
// default revision: each tier lists its tools, every call equals the same
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

	// A reload of the first gateway amid a stream of calls alternating
	// between both: every call answered.
	cs, _ := connect2026(t, f.gateways, paid)
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
