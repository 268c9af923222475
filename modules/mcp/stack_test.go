package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// bins are the civicgate and recordsd binaries, built once for the package.
var bins stack.Binaries

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// keyed sends every request with a key over base.
type keyed struct {
	key  string
	base http.RoundTripper
}

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.base.RoundTrip(r)
}

// TestShippedGatewayRecordsTools: the civicgate binary with the shipped
// Caddyfile.local in front of recordsd (seeded), keys in PostgreSQL: each
// shipped tier lists its records tools, a paged tool pages, a tool call
// answers what POST /v1/graphql answers, a tool outside the tier is
// refused, and revoking the key ends the session.
func TestShippedGatewayRecordsTools(t *testing.T) {
	testenv.NeedsServices(t)
	s := stack.New(t, &bins)
	if out, _ := s.RunErr(s.Bins.Civicgate, "list-modules"); !strings.Contains(out, "http.handlers.civic_mcp") {
		t.Fatal("cmd/civicgate does not link modules/mcp, so the shipped route cannot run: import it in cmd/civicgate/main.go")
	}
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	free, freeID := s.IssueKey("mcp-free", "free", "live")
	paid, _ := s.IssueKey("mcp-paid", "paid_beta", "live")
	connect := func(key string) *mcpsdk.ClientSession {
		client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), &mcpsdk.StreamableClientTransport{
			Endpoint: s.HTTPSURL + "/v1/mcp", HTTPClient: &http.Client{Transport: keyed{key, s.Client.Transport}},
			DisableStandaloneSSE: true, MaxRetries: -1,
		}, &mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	fcs, pcs := connect(free), connect(paid)
	if got := toolNames(t, fcs); strings.Join(got, ",") != "get_bill,list_members,search_bills" {
		t.Errorf("free lists %v", got)
	}
	if got := toolNames(t, pcs); len(got) != 6 {
		t.Errorf("paid_beta lists %v", got)
	}

	// Two pages of bills, the second from the first's cursor.
	res, text := callText(t, fcs, "search_bills", map[string]any{"first": 2})
	var page struct {
		Bills struct {
			Items      []struct{ ID string }
			NextCursor *string
		}
	}
	if err := json.Unmarshal([]byte(text), &page); err != nil || res.IsError || len(page.Bills.Items) != 2 || page.Bills.NextCursor == nil {
		t.Fatalf("search_bills: %v %s", err, text)
	}
	first := page.Bills.Items[0].ID
	_, text = callText(t, fcs, "search_bills", map[string]any{"first": 2, "after": *page.Bills.NextCursor})
	if err := json.Unmarshal([]byte(text), &page); err != nil || len(page.Bills.Items) == 0 || page.Bills.Items[0].ID == first {
		t.Fatalf("the second page: %v %s", err, text)
	}

	// get_bill equals the same document as POST /v1/graphql.
	res, text = callText(t, fcs, "get_bill", map[string]any{"id": first})
	manifest, err := os.ReadFile("../../caddyfile/mcp-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Operations []struct{ Name, Body string } }
	_ = json.Unmarshal(manifest, &m)
	var doc string
	for _, op := range m.Operations {
		if op.Name == "GetBill" {
			doc = op.Body
		}
	}
	body, _ := json.Marshal(map[string]any{"query": doc, "variables": map[string]any{"id": first}})
	req, _ := http.NewRequest(http.MethodPost, s.HTTPSURL+"/v1/graphql", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+free)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var direct struct{ Data json.RawMessage }
	_ = json.NewDecoder(resp.Body).Decode(&direct)
	resp.Body.Close()
	if res.IsError || !jsonEqual(t, []byte(text), direct.Data) {
		t.Errorf("get_bill %s; POST /v1/graphql %s", text, direct.Data)
	}

	// A paid tool for the free tier.
	_, err = fcs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "search_lobbying_disclosures", Arguments: map[string]any{}})
	checkNotEntitled(t, err, "lobbying_disclosures")

	// Revoking the free key ends its session: its event stream closes.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.HTTPSURL+"/v1/mcp", nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", fcs.ID())
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	stream, err := (&http.Client{Transport: keyed{free, s.Client.Transport}}).Do(get)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, stream)
	}
	defer stream.Body.Close()
	ended := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
		}
		ended <- time.Now()
	}()
	revoked := time.Now()
	s.Run(s.Bins.Civicgate, "keys", "revoke", freeID)
	select {
	case at := <-ended:
		t.Logf("the session's stream ended %s after `keys revoke` returned (docs/design.md D22: within 2 s)", at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the session's stream still open 30 s after the revocation: the credential watch never fired")
	}
}
