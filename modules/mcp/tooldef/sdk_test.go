package tooldef

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools served by the go-sdk's Streamable HTTP handler the way the Caddy
// module will (docs/mcp.md "Serving the tools"): one *mcp.Server per set of
// families, chosen per request by getServer; the tool handler checks the
// arguments, builds the GraphQL request and renders the answer. The
// "upstream" here is a function; the caller's identity travels in the
// request context as civic_auth's does.

type callerKey struct{}

// caller is what civic_auth would have resolved for the request.
type caller struct{ key, families string }

// fakeUpstream answers a tool's GraphQL request body.
func fakeUpstream(body []byte) (int, []byte) {
	var req struct {
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return 400, []byte(`{"errors":[{"message":"Request body must be JSON"}]}`)
	}
	if req.OperationName == "GetBill" {
		if req.Variables["id"] == "hr1-118" {
			return 200, []byte(`{"data":{"bill":{"id":"hr1-118","congress":118,"type":"hr","number":1,"officialTitle":"T","introducedDate":null,"memberName":null,"memberBioguideId":null,"committeeNames":"","sourceUrl":null,"memberByCongressKey":null,"lastSyncedAt":"2026-01-01T00:00:00Z"}}}`)
		}
		return 200, []byte(`{"data":{"bill":null}}`)
	}
	return 200, []byte(`{"data":null,"errors":[{"message":"not in this test","extensions":{"code":"BAD_USER_INPUT"}}]}`)
}

// toolHandler is the handler of one tool; seen records the caller the
// handler found in its context.
func toolHandler(tool *Tool, seen chan<- string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, _ := ctx.Value(callerKey{}).(caller)
		seen <- c.key
		if !tool.Entitled(c.families) {
			return Result(403, []byte(`{"error":"Tier not entitled to this endpoint family"}`), ""), nil
		}
		body, err := tool.Request(req.Params.Arguments)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		status, answer := fakeUpstream(body)
		return Result(status, answer, ""), nil
	}
}

// serve starts the SDK's handler for the records tools; the X-Test-Key
// header stands for the bearer key civic_auth would have checked.
func serve(t *testing.T, stateless bool, seen chan string) *httptest.Server {
	t.Helper()
	set := recordsTools(t)
	tiers := map[string]string{"free-key": "bills,members", "paid-key": "bills,members,regulatory_filings,federal_budgets,lobbying_disclosures,changes"}
	servers := map[string]*mcp.Server{}
	for _, owned := range tiers {
		s := mcp.NewServer(&mcp.Implementation{Name: "civicgate", Version: "test"}, &mcp.ServerOptions{
			SupportedProtocolVersions: []string{"2025-11-25", "2025-06-18"},
			Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		})
		for _, mt := range set.For(owned) {
			tool, _ := set.Lookup(mt.Name)
			s.AddTool(mt, toolHandler(tool, seen))
		}
		servers[owned] = s
	}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		c, _ := r.Context().Value(callerKey{}).(caller)
		return servers[c.families]
	}, &mcp.StreamableHTTPOptions{Stateless: stateless, DisableLocalhostProtection: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Test-Key")
		families, ok := tiers[key]
		if !ok {
			http.Error(w, `{"error":"Invalid API key"}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller{key, families})))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// keyTransport sends every request with a key, switchable mid-session.
type keyTransport struct{ key *string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Key", *k.key)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, srv *httptest.Server, key *string, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint: srv.URL, HTTPClient: &http.Client{Transport: keyTransport{key}}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
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

// Stateless: every POST gets the server of its caller's tier, and the tool
// handler's context holds that POST's values (the caller of this call).
func TestToolsOverStreamableHTTPStateless(t *testing.T) {
	seen := make(chan string, 16)
	srv := serve(t, true, seen)
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		key := "free-key"
		cs := connect(t, srv, &key, version)
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Errorf("negotiated %s, want %s", got, version)
		}
		// The SDK lists a server's tools by name, not in manifest order.
		if got := toolNames(t, cs); !slices.Equal(got, []string{"get_bill", "list_members", "search_bills"}) {
			t.Errorf("free tier lists %v", got)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_bill", Arguments: map[string]any{"id": "hr1-118"}})
		if err != nil || res.IsError {
			t.Fatalf("get_bill: %v %+v", err, res)
		}
		if sc, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(sc), `"officialTitle":"T"`) {
			t.Errorf("structuredContent %s", sc)
		}
		if got := <-seen; got != "free-key" {
			t.Errorf("the handler saw caller %q", got)
		}
		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_bill", Arguments: map[string]any{"id": 7}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `argument "id" must be a string`) {
			t.Errorf("a bad argument: %v %+v", err, res)
		}
		<-seen
		// A tool of another family is not on this tier's server.
		_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_lobbying_disclosures"})
		if err == nil || !strings.Contains(err.Error(), `unknown tool "search_lobbying_disclosures"`) {
			t.Errorf("a tool outside the tier: %v", err)
		}

		// The same client, now with the paid key: the next POST is served
		// by the paid tier's server (no session ties it to the first key).
		key = "paid-key"
		if got := toolNames(t, cs); len(got) != 6 {
			t.Errorf("paid tier lists %v", got)
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_bill", Arguments: map[string]any{"id": "x"}}); err != nil {
			t.Fatal(err)
		}
		if got := <-seen; got != "paid-key" {
			t.Errorf("the handler saw caller %q after the key changed", got)
		}
	}
}

// Stateful: the tool handler's context holds the values of the request that
// opened the session, not of the call's own POST; the call's headers are in
// req.Extra.Header. This is why the Caddy module must find the caller of a
// call itself (docs/mcp.md).
func TestToolsOverStreamableHTTPStatefulContext(t *testing.T) {
	seen := make(chan string, 16)
	srv := serve(t, false, seen)
	key := "paid-key"
	cs := connect(t, srv, &key, "2025-11-25")
	if cs.ID() == "" {
		t.Fatal("no session id")
	}
	key = "free-key" // the same session, presented with another key
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_lobbying_disclosures", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "paid-key" {
		t.Errorf("the handler saw %q: want the session opener's context", got)
	}
	// The session's server is the paid tier's, whatever key the call carries:
	// without a binding of the session to its key, the free key reaches a
	// paid tool.
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "not in this test") {
		t.Errorf("%q: the call was expected to reach the upstream under the opener's tier", text)
	}
}
