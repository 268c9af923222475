package e2e

import (
	"bufio"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestMCP2026ListenTierEverywhere: a subscriptions/listen stream is open on
// each of two gateways; `civicgate keys set-tier` moves the key's
// organization from free to paid_beta, and BOTH streams receive
// notifications/tools/list_changed within 2 s with no further request by
// the key (docs/design.md D80: civic_auth's credential watch reports the new
// families after the store's NOTIFY org:), then tools/list on either gateway
// lists paid_beta's tools.
func TestMCP2026ListenTierEverywhere(t *testing.T) {
	f := startFleet(t, 2, "redis://"+testenv.RedisAddr()+"/0")
	a := f.gateways[0]
	const org = "mcp26tier"
	key, _ := a.IssueKey(org, "free", "live")
	defer func() {
		for _, s := range f.gateways {
			s.CheckLogs(t, key)
		}
	}()
	if free, paid := toolsOfTier(t, a.Root, "free"), toolsOfTier(t, a.Root, "paid_beta"); slices.Equal(free, paid) {
		t.Fatalf("free and paid_beta list the same tools %v: the test needs tiers that differ", free)
	}
	// arrival is when a gateway's list_changed was read off its stream.
	type arrival struct {
		gateway int
		at      time.Time
	}
	changed := make(chan arrival, 2*len(f.gateways))
	for i, s := range f.gateways {
		sc := openListen(t, s, key)
		go func() {
			for sc.Scan() {
				if line := sc.Text(); strings.HasPrefix(line, "data: ") && strings.Contains(line, `"notifications/tools/list_changed"`) {
					if !strings.Contains(line, `"io.modelcontextprotocol/subscriptionId":"l"`) {
						t.Errorf("gateway %d: list_changed without the stream's subscription id: %s", i, line)
					}
					changed <- arrival{i, time.Now()}
				}
			}
		}()
	}
	// The 2 s run from when the command returned, its change committed: the
	// command's own start (a process, under -race seconds on a loaded
	// machine) is not the gateways' delay.
	start := time.Now()
	a.Run(a.Bins.Civicgate, "keys", "set-tier", "--org", org, "--tier", "paid_beta")
	done := time.Now()
	t.Logf("keys set-tier took %v", done.Sub(start).Round(time.Millisecond))
	got := make([]bool, len(f.gateways))
	for range f.gateways {
		select {
		case c := <-changed:
			i, d := c.gateway, c.at.Sub(done)
			t.Logf("gateway %d: notifications/tools/list_changed %v after keys set-tier returned", i, d.Round(time.Millisecond))
			if d > 2*time.Second {
				t.Errorf("gateway %d: list_changed %v after the tier change, want within 2 s", i, d)
			}
			if got[i] {
				t.Errorf("gateway %d: list_changed twice for one tier change", i)
			}
			got[i] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("list_changed received by gateways %v of %d, 10 s after the tier change", got, len(f.gateways))
		}
	}
	want := toolsOfTier(t, a.Root, "paid_beta")
	for i, s := range f.gateways {
		cs, _ := connect2026(t, []*stack.Stack{s}, key)
		if names := mcpToolNames(t, cs); !slices.Equal(names, want) {
			t.Errorf("gateway %d lists %v after the tier change, want paid_beta's %v", i, names, want)
		}
	}
}

// openListen opens a 2026-07-28 subscriptions/listen stream ("id":"l",
// toolsListChanged asked) of key on gateway s and returns its lines once
// the stream acknowledged it; the stream closes with the test.
func openListen(t *testing.T, s *stack.Stack, key string) *bufio.Scanner {
	t.Helper()
	const listen = `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.HTTPSURL+"/v1/mcp", strings.NewReader(listen))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: listen answered %d", s.HTTPSURL, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	acked := false
	for !acked && sc.Scan() {
		acked = strings.Contains(sc.Text(), "notifications/subscriptions/acknowledged")
	}
	if !acked {
		t.Fatalf("%s: the stream ended before its acknowledgement: %v", s.HTTPSURL, sc.Err())
	}
	return sc
}
