package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// Every transport lands on one operation row (docs/design.md D70, D76): one
// key sends the same query document by POST, GET, an Automatic Persisted
// Query (registered, then by hash alone), graphql-ws and graphql-sse (the
// npm clients) through one gateway and by POST through a second gateway on
// the same database; a subscription goes over graphql-ws to the second
// gateway, which terminates subscriptions, over graphql-sse through the
// first, which tunnels them, and over graphql-sse to the second; and an MCP
// tool call runs the tool's own document. `civicgate usage operations` then
// shows one row per document with exactly the requests sent, and `usage
// fields` the coordinates each document read, counted as often.
//
// The first gateway also serves a trusted-document manifest holding the
// query laid out over several lines, under its SHA-256 id and under a
// custom id: sent by either id it lands on the same row, for the row is
// the guard's normal-form hash of the document, not the manifest's id nor
// the hash of its exact text (docs/design.md D83).

// streamsTier holds the library's families and the records' bills, for
// the MCP tool.
var streamsTier = []string{"tier opstreams 1000/m catalog loans bills members"}

// The documents: a query every transport carries, a subscription.
const (
	shelfQuery = `query ShelfTitles { books(first: 2) { nodes { title author { name } } } }`
	loanFeed   = `subscription LoanFeed { loanEvents { kind } }`
)

// terminatedLibrarySite is npmLibrarySite answering subscriptions itself.
var terminatedLibrarySite = strings.Replace(npmLibrarySite, "\t\t\t\tinit_timeout 10s\n",
	"\t\t\t\tinit_timeout 10s\n\t\t\t\tupstream ws://{$NPM_LIBRARY_UPSTREAM}/graphql\n"+
		"\t\t\t\tupstream_header X-Civic-Identity {http.request.header.X-Civic-Identity}\n", 1)

// trustedShelf is shelfQuery as a manifest might hold it: the same
// document, laid out otherwise, so its SHA-256 is not shelfQuery's.
const trustedShelf = "query ShelfTitles {\n  books(first: 2) {\n    nodes {\n      title\n      author { name }\n    }\n  }\n}\n"

// trustedShelfID is trustedShelf's custom id in the manifest.
const trustedShelfID = "kiosk-shelf-titles"

// withTrustedDocuments is site with a trusted_documents line naming a
// manifest of trustedShelf, written to a temporary file, and the
// document's SHA-256 id.
func withTrustedDocuments(t *testing.T, site string) (string, string) {
	t.Helper()
	sum := sha256.Sum256([]byte(trustedShelf))
	id := "sha256:" + hex.EncodeToString(sum[:])
	manifest, err := json.Marshal(map[string]string{id: trustedShelf, trustedShelfID: trustedShelf})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	const anchor = "\t\t\tpersisted_queries {\n"
	out := strings.Replace(site, anchor, "\t\t\ttrusted_documents "+path+"\n"+anchor, 1)
	if out == site {
		t.Fatal("npmLibrarySite no longer holds a persisted_queries block")
	}
	return out, id
}

// streamsGateway is one gateway of the test: its stack and its library
// site's URLs.
type streamsGateway struct {
	s             *stack.Stack
	libURL, libWS string
}

// startStreamsGateways starts recordsd, the library engine and two
// gateways on one database and Redis prefix: the first tunnels
// subscriptions, the second terminates them. schema, when given, is the
// gateways' copy of the library's schema instead of the engine's own.
func startStreamsGateways(t *testing.T, events *library.LoanEvents, schema ...string) ([2]streamsGateway, string) {
	t.Helper()
	a := stack.New(t, &bins)
	engine := library.NewHandler(library.NewCatalog(), events, library.Options{
		IdentitySecret: []byte(a.Getenv("CIVIC_IDENTITY_SECRET")),
		KeepAlive:      time.Hour,
	})
	lib := httptest.NewServer(engine)
	t.Cleanup(lib.Close)
	b := stack.New(t, &bins)
	var gws [2]streamsGateway
	for i, s := range []*stack.Stack{a, b} {
		if s == b {
			for _, name := range sharedEnv {
				s.Setenv(name, a.Getenv(name))
			}
		}
		port := strconv.Itoa(testenv.FreePort(t))
		s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
		s.Setenv("NPM_LIBRARY_PORT", port)
		s.Setenv("NPM_LIBRARY_SCHEMA", filepath.Join(s.Root, "examples", "other-backend", "library.graphqls"))
		if len(schema) > 0 {
			s.Setenv("NPM_LIBRARY_SCHEMA", schema[0])
		}
		s.Setenv("NPM_LIBRARY_UPSTREAM", strings.TrimPrefix(lib.URL, "http://"))
		gws[i] = streamsGateway{s: s, libURL: "http://127.0.0.1:" + port + "/graphql", libWS: "ws://127.0.0.1:" + port + "/graphql"}
	}
	if terminatedLibrarySite == npmLibrarySite {
		t.Fatal("npmLibrarySite no longer holds the subscriptions block's init_timeout line")
	}
	a.Prepare()
	a.StartRecordsd()
	const lastAnchor = "# Any other Host on this port: 421 JSON (misdirected.caddy).\n"
	trustedSite, trustedID := withTrustedDocuments(t, npmLibrarySite)
	a.StartGateway(gatewayFiles(t, a.Root, streamsTier, [2]string{lastAnchor, trustedSite + lastAnchor}))
	b.StartGateway(gatewayFiles(t, b.Root, streamsTier, [2]string{lastAnchor, terminatedLibrarySite + lastAnchor}))
	return gws, trustedID
}

// streamsOperation is a row of `civicgate usage operations --json`.
type streamsOperation struct {
	KeyID    string `json:"key_id"`
	Hash     string `json:"hash"`
	Type     string `json:"type"`
	Name     string `json:"name"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
}

func TestOperationsEveryTransportOneRow(t *testing.T) {
	dir := npmClients(t)
	events := library.NewLoanEvents()
	gws, trustedID := startStreamsGateways(t, events)
	a, b := gws[0], gws[1]
	org := "opstreams-" + testenv.RandomSuffix(6)
	key, id := a.s.IssueKey(org, "opstreams", "live")
	t.Cleanup(func() { a.s.CheckLogs(t, key); b.s.CheckLogs(t, key) })

	send := func(method, target, body string) {
		t.Helper()
		st, got, _, err := sendWithKey(method, target, key, body)
		if err != nil || st != http.StatusOK || strings.Contains(got, `"errors"`) || !strings.Contains(got, "title") {
			t.Fatalf("%s %s: %d %s %v", method, target, st, got, err)
		}
	}
	// POST and GET through the first gateway.
	send(http.MethodPost, a.libURL, fmt.Sprintf(`{"query":%q}`, shelfQuery))
	send(http.MethodGet, a.libURL+"?query="+url.QueryEscape(shelfQuery), "")
	// An Automatic Persisted Query: registered with its text, then sent by
	// its hash alone.
	sum := sha256.Sum256([]byte(shelfQuery))
	apq := fmt.Sprintf(`"extensions":{"persistedQuery":{"version":1,"sha256Hash":%q}}`, hex.EncodeToString(sum[:]))
	send(http.MethodPost, a.libURL, fmt.Sprintf(`{"query":%q,%s}`, shelfQuery, apq))
	send(http.MethodPost, a.libURL, "{"+apq+"}")
	// The trusted document, by its SHA-256 id and by its custom id.
	send(http.MethodPost, a.libURL, fmt.Sprintf(`{"documentId":%q}`, trustedID))
	send(http.MethodPost, a.libURL, fmt.Sprintf(`{"documentId":%q}`, trustedShelfID))
	// graphql-ws and graphql-sse (the npm clients) carry the query too.
	for _, c := range []struct{ script, url string }{{"graphql-ws.mjs", a.libWS}, {"graphql-sse.mjs", a.libURL}} {
		var out struct {
			Events []json.RawMessage `json:"events"`
			Error  *clientError      `json:"error"`
		}
		raw := runNPMScript(t, dir, "", c.script, key, map[string]any{"url": c.url, "query": shelfQuery, "count": 1}, &out)
		if out.Error != nil || len(out.Events) != 1 || !strings.Contains(string(out.Events[0]), "title") {
			t.Fatalf("%s, the query: %s", c.script, raw)
		}
	}
	// Two POSTs through the second gateway, on the same database.
	send(http.MethodPost, b.libURL, fmt.Sprintf(`{"query":%q}`, shelfQuery))
	send(http.MethodPost, b.libURL, fmt.Sprintf(`{"query":%q}`, shelfQuery))

	// The subscription: over graphql-ws to the terminating gateway, over
	// graphql-sse through the tunnelling one and to the terminating one; one
	// event each, the client leaving after it.
	subscribers := []struct{ script, url string }{{"graphql-ws.mjs", b.libWS}, {"graphql-sse.mjs", a.libURL}, {"graphql-sse.mjs", b.libURL}}
	for i, c := range subscribers {
		run := startNPMScript(t, dir, "", c.script, key, map[string]any{"url": c.url, "query": loanFeed, "count": 1})
		awaitSubscribers(t, events, 1)
		events.Publish(&library.LoanEvent{Kind: library.LoanEventKindBorrowed})
		var out struct {
			Events []json.RawMessage `json:"events"`
			Error  *clientError      `json:"error"`
		}
		raw := run.wait(t, &out)
		if out.Error != nil || len(out.Events) != 1 || !strings.Contains(string(out.Events[0]), "BORROWED") {
			t.Fatalf("%s, the subscription: %s", c.script, raw)
		}
		awaitSubscribers(t, events, 0)
		awaitOperationRows(t, a.s, org, map[string]streamsOperation{
			"ShelfTitles": {KeyID: id, Type: "query", Name: "ShelfTitles", Requests: 10},
			"LoanFeed":    {KeyID: id, Type: "subscription", Name: "LoanFeed", Requests: int64(i + 1)},
		})
	}

	// An MCP tool call runs the tool's document: a row of its own.
	cs := mcpConnect(t, a.s, key)
	if res, text := mcpCall(t, cs, "search_bills", map[string]any{"first": 1}); res.IsError {
		t.Fatalf("search_bills: %s", text)
	}

	want := map[string]streamsOperation{
		"ShelfTitles": {KeyID: id, Type: "query", Name: "ShelfTitles", Requests: 10},
		"LoanFeed":    {KeyID: id, Type: "subscription", Name: "LoanFeed", Requests: int64(len(subscribers))},
		"SearchBills": {KeyID: id, Type: "query", Name: "SearchBills", Requests: 1},
	}
	ops := awaitOperationRows(t, a.s, org, want)
	for _, op := range ops {
		w := want[op.Name]
		w.Hash = op.Hash
		if op != w || len(op.Hash) != 64 {
			t.Errorf("row %+v, want %+v", op, w)
		}
	}

	// The shapes came with them: each coordinate counted as often as the
	// operations that read it ran, whichever transport carried them.
	out := a.s.Run(a.s.Bins.Civicgate, "usage", "fields", "--org", org, "--since", "1h", "--json")
	var fields struct {
		Fields []struct {
			Coordinate string `json:"coordinate"`
			Requests   int64  `json:"requests"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string]int64{}
	for _, f := range fields.Fields {
		got[f.Coordinate] = f.Requests
	}
	for coord, n := range map[string]int64{"Query.books": 10, "Query.books(first:)": 10, "BookConnection.nodes": 10,
		"Book.title": 10, "Book.author": 10, "Author.name": 10, "Subscription.loanEvents": 3, "LoanEvent.kind": 3,
		"Query.bills": 1} {
		if got[coord] != n {
			t.Errorf("coordinate %s counted %d, want %d (fields %s)", coord, got[coord], n, out)
		}
	}
}

// awaitOperationRows waits until `civicgate usage operations --json` shows
// org's rows with the names and request counts of want, and no other, and
// returns them.
func awaitOperationRows(t *testing.T, s *stack.Stack, org string, want map[string]streamsOperation) []streamsOperation {
	t.Helper()
	var ops []streamsOperation
	stack.WaitFor(t, 60*time.Second, "one row per document with every request", func() error {
		out, err := s.RunErr(s.Bins.Civicgate, "usage", "operations", "--org", org, "--since", "1h", "--json")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var answer struct {
			Operations []streamsOperation `json:"operations"`
		}
		if err := json.Unmarshal([]byte(out), &answer); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		ops = answer.Operations
		if len(ops) != len(want) {
			return fmt.Errorf("rows %+v, want %d", ops, len(want))
		}
		for _, op := range ops {
			if w, ok := want[op.Name]; !ok || op.Requests != w.Requests {
				return fmt.Errorf("rows %+v, want %+v", ops, want)
			}
		}
		return nil
	})
	return ops
}

// sendWithKey sends one request with key as its bearer token.
func sendWithKey(method, target, key, body string) (int, string, http.Header, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, r)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), resp.Header, err
}

// An upstream's error on an admitted subscription counts one error on its
// operation's row (docs/design.md D83). The gateways' schema is ahead of the
// engine's: loanEvents takes an argument the engine does not know, so the
// guard admits `loanEvents(since: 1)` and the engine (gqlgen) rejects it —
// over graphql-ws with an `error` message, over graphql-sse with a `next`
// result holding the errors. The subscription goes over graphql-ws through
// the tunnelling gateway and to the terminating one, and over graphql-sse to
// the terminating one (whose hub reads the engine's graphql-ws `error`) and
// through the tunnelling one (a 200 stream whose result holds errors: a
// result, not an error, as a POST's 200 with errors).
func TestOperationsSubscriptionErrors(t *testing.T) {
	dir := npmClients(t)
	events := library.NewLoanEvents()
	// The repository's schema, the stack's root being a copy of it.
	src, err := os.ReadFile(filepath.Join("..", "examples", "other-backend", "library.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	ahead := strings.Replace(string(src), "  loanEvents: LoanEvent!", "  loanEvents(since: Int): LoanEvent!", 1)
	if ahead == string(src) {
		t.Fatal("library.graphqls no longer declares loanEvents without arguments")
	}
	schema := filepath.Join(t.TempDir(), "library-ahead.graphqls")
	if err := os.WriteFile(schema, []byte(ahead), 0o600); err != nil {
		t.Fatal(err)
	}
	gws, _ := startStreamsGateways(t, events, schema)
	a, b := gws[0], gws[1]
	org := "suberr-" + testenv.RandomSuffix(6)
	key, id := a.s.IssueKey(org, "opstreams", "live")
	t.Cleanup(func() { a.s.CheckLogs(t, key); b.s.CheckLogs(t, key) })

	const ghost = `subscription GhostFeed { loanEvents(since: 1) { kind } }`
	steps := []struct {
		script, url      string
		requests, errors int64
	}{
		{"graphql-ws.mjs", a.libWS, 1, 1},   // tunnelled: the engine's error message
		{"graphql-ws.mjs", b.libWS, 2, 2},   // terminated: the hub's error
		{"graphql-sse.mjs", b.libURL, 3, 3}, // terminated stream: the hub's error
		{"graphql-sse.mjs", a.libURL, 4, 3}, // tunnelled stream: a result with errors
	}
	for _, st := range steps {
		var out struct {
			Events []json.RawMessage `json:"events"`
			Error  *clientError      `json:"error"`
		}
		raw := runNPMScript(t, dir, "", st.script, key, map[string]any{"url": st.url, "query": ghost, "count": 1}, &out)
		failed := out.Error != nil && len(out.Error.Errors) > 0
		if !failed && (len(out.Events) != 1 || !strings.Contains(string(out.Events[0]), `"errors"`)) {
			t.Fatalf("%s %s: the engine's refusal did not reach the client: %s", st.script, st.url, raw)
		}
		awaitOperationErrors(t, a, org, streamsOperation{KeyID: id, Type: "subscription", Name: "GhostFeed",
			Requests: st.requests, Errors: st.errors})
	}
	if n := events.Subscribers(); n != 0 {
		t.Fatalf("%d loanEvents subscribers: the engine ran a subscription it rejected", n)
	}
}

// awaitOperationErrors waits until org's only row is want (its hash aside).
func awaitOperationErrors(t *testing.T, g streamsGateway, org string, want streamsOperation) {
	t.Helper()
	s := g.s
	stack.WaitFor(t, 60*time.Second, fmt.Sprintf("the row %+v", want), func() error {
		out, err := s.RunErr(s.Bins.Civicgate, "usage", "operations", "--org", org, "--since", "1h", "--json")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var answer struct {
			Operations []streamsOperation `json:"operations"`
		}
		if err := json.Unmarshal([]byte(out), &answer); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if len(answer.Operations) != 1 {
			return fmt.Errorf("rows %+v", answer.Operations)
		}
		got := answer.Operations[0]
		got.Hash = ""
		if got != want {
			return fmt.Errorf("row %+v", got)
		}
		return nil
	})
}
