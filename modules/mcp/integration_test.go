package mcp

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An initialize through the gateway negotiates the revision asked for, and
// each tier lists exactly its families' tools.
func TestToolsPerTier(t *testing.T) {
	g := newGateway(t)
	reader, partner := g.issue(t, "reader"), g.issue(t, "partner")
	g.start(t, gatewayConfig{})
	for _, version := range supportedVersions {
		client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), &mcpsdk.StreamableClientTransport{
			Endpoint: g.base + "/v1/mcp", HTTPClient: &http.Client{Transport: bearer{reader.Key}}, DisableStandaloneSSE: true, MaxRetries: -1,
		}, &mcpsdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Errorf("negotiated %s, want %s", got, version)
		}
		_ = cs.Close()
	}
	// The SDK lists a server's tools by name.
	if got := toolNames(t, g.connect(t, reader.Key, nil)); !slices.Equal(got, []string{"get_book", "list_authors", "list_books"}) {
		t.Errorf("reader lists %v", got)
	}
	if got := toolNames(t, g.connect(t, partner.Key, nil)); !slices.Equal(got, []string{"get_book", "list_authors", "list_books", "member_loans"}) {
		t.Errorf("partner lists %v", got)
	}
}

// A tool of a family the tier lacks is a JSON-RPC error with the 403's
// words, before anything is sent upstream.
func TestToolOutsideTheTier(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	cs := g.connect(t, reader.Key, nil)
	before := g.up.calls.Load()
	_, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "member_loans", Arguments: map[string]any{"memberId": "m1"}})
	checkNotEntitled(t, err, "loans")
	if n := g.up.calls.Load() - before; n != 0 {
		t.Errorf("the upstream saw %d requests", n)
	}
	// A name of no tool at all stays the SDK's "unknown tool".
	if _, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "drop_tables"}); err == nil || !strings.Contains(err.Error(), `unknown tool "drop_tables"`) {
		t.Errorf("an unknown tool: %v", err)
	}
}

// A tool call answers what the same operation answers as POST /v1/graphql
// through the same chain: structuredContent is the data, the text its JSON.
func TestToolCallEqualsGraphQLPost(t *testing.T) {
	g := newGateway(t)
	partner := g.issue(t, "partner")
	g.start(t, gatewayConfig{})
	cs := g.connect(t, partner.Key, nil)
	manifest := readManifest(t)
	for _, c := range []struct {
		tool, op string
		args     map[string]any
	}{
		{"get_book", "GetBook", map[string]any{"id": "b3"}},
		{"list_authors", "ListAuthors", map[string]any{"first": 2}},
		{"member_loans", "MemberLoans", map[string]any{"memberId": "m1"}},
		{"get_book", "GetBook", map[string]any{"id": "nope"}},
	} {
		res, text := callText(t, cs, c.tool, c.args)
		if res.IsError {
			t.Fatalf("%s: %s", c.tool, text)
		}
		want := g.graphql(t, partner.Key, manifest[c.op], c.args)
		sc, _ := json.Marshal(res.StructuredContent)
		if !jsonEqual(t, sc, want) || !jsonEqual(t, []byte(text), want) {
			t.Errorf("%s: structuredContent %s, text %s; POST /v1/graphql answered %s", c.tool, sc, text, want)
		}
	}
	// The upstream got the manifest's document byte for byte, as a trusted
	// document would be sent, with the caller's identity.
	g.up.mu.Lock()
	defer g.up.mu.Unlock()
	found := false
	for i, b := range g.up.bodies {
		if !strings.Contains(b, `"operationName":"GetBook"`) {
			continue
		}
		found = true
		if want := `{"query":` + mustJSON(manifest["GetBook"]) + `,"operationName":"GetBook","variables":`; !strings.HasPrefix(b, want) {
			t.Errorf("upstream body %s, want it to start %s", b, want)
		}
		// Nothing of the MCP exchange goes upstream; the identity does.
		for k := range g.up.headers[i] {
			if strings.HasPrefix(k, "Mcp-") || k == callHeader || k == "Authorization" {
				t.Errorf("upstream got %s", k)
			}
		}
		if g.up.headers[i].Get("X-Civic-Identity") == "" || g.up.headers[i].Get("Accept") != "application/json" {
			t.Errorf("upstream headers %v", g.up.headers[i])
		}
	}
	if !found {
		t.Errorf("no GetBook request upstream: %q", g.up.bodies)
	}
}

// A paged tool: each page's endCursor, passed back as after, gives the
// next page until it is null; the pages hold every book once.
func TestPagedTool(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	cs := g.connect(t, reader.Key, nil)
	args := map[string]any{"first": 3}
	var ids []string
	for page := 0; ; page++ {
		if page == 5 {
			t.Fatalf("no last page after %d pages: %v", page, ids)
		}
		res, text := callText(t, cs, "list_books", args)
		if res.IsError {
			t.Fatal(text)
		}
		var out struct {
			Books struct {
				Nodes     []struct{ ID string }
				EndCursor *string
			}
		}
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatal(err)
		}
		for _, n := range out.Books.Nodes {
			ids = append(ids, n.ID)
		}
		if out.Books.EndCursor == nil || len(out.Books.Nodes) == 0 {
			break
		}
		args = map[string]any{"first": 3, "after": *out.Books.EndCursor}
	}
	var all struct {
		Books struct{ Nodes []struct{ ID string } }
	}
	_ = json.Unmarshal(g.graphql(t, reader.Key, `{ books(first: 100) { nodes { id } } }`, nil), &all)
	var want []string
	for _, n := range all.Books.Nodes {
		want = append(want, n.ID)
	}
	if !slices.Equal(ids, want) || len(want) < 4 {
		t.Errorf("paged %v, all books %v", ids, want)
	}
}

// Arguments the input schema refuses are answered with the argument's name
// and never reach the upstream.
func TestBadArgumentsSendNothing(t *testing.T) {
	g := newGateway(t)
	reader := g.issue(t, "reader")
	g.start(t, gatewayConfig{})
	cs := g.connect(t, reader.Key, nil)
	before := g.up.calls.Load()
	for args, want := range map[string]string{
		`{"id":7}`:              `argument "id" must be a string`,
		`{}`:                    `argument "id" is required`,
		`{"id":"b1","limit":3}`: `"limit" is not an argument of this tool`,
	} {
		var a map[string]any
		_ = json.Unmarshal([]byte(args), &a)
		res, text := callText(t, cs, "get_book", a)
		if !res.IsError || !strings.Contains(text, want) {
			t.Errorf("get_book %s: %v %q, want an error containing %q", args, res.IsError, text, want)
		}
	}
	if n := g.up.calls.Load() - before; n != 0 {
		t.Errorf("the upstream saw %d requests", n)
	}
}

func readManifest(t *testing.T) map[string]string {
	t.Helper()
	var m struct {
		Operations []struct{ Name, Body string }
	}
	data, err := os.ReadFile(libraryTools)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, op := range m.Operations {
		out[op.Name] = op.Body
	}
	return out
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
