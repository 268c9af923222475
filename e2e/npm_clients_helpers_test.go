package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// The npm GraphQL clients of e2e/npm-clients (Apollo Client, urql,
// graphql-ws, graphql-sse, pinned in its package-lock.json) as clients of the
// built gateway. Each .mjs script takes one JSON argument, reads the
// credential from CIVIC_BEARER and prints one JSON document on stdout.

// npmClientsCeiling bounds one script's run: a bound on a failure (a client
// that never finishes), not an expectation of speed.
const npmClientsCeiling = 2 * time.Minute

// npmClients copies e2e/npm-clients (package.json, the lock and the scripts,
// not an installed node_modules) into a directory of the test's own and
// installs the locked packages there with `npm ci`, as nodeClient does for
// e2e/mcp-node: npm failing fails the test, never skips it.
func npmClients(t *testing.T) string {
	t.Helper()
	return npmInstall(t, "npm-clients", "the pinned GraphQL clients")
}

// npmRun is one running client script.
type npmRun struct {
	name           string
	bearer         string
	stdout, stderr bytes.Buffer
	done           chan error
}

// startNPMScript starts `node script` in dir with cfg as its argument and
// bearer (none when "") in CIVIC_BEARER, trusting caRoot (when not "").
func startNPMScript(t *testing.T, dir, caRoot, script, bearer string, cfg any) *npmRun {
	t.Helper()
	arg, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), npmClientsCeiling)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "node", script, string(arg))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CIVIC_BEARER="+bearer)
	if caRoot != "" {
		cmd.Env = append(cmd.Env, "NODE_EXTRA_CA_CERTS="+caRoot)
	}
	r := &npmRun{name: script, bearer: bearer, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	go func() { r.done <- cmd.Wait() }()
	return r
}

// wait awaits the script's end and decodes its output into out; a non-zero
// exit, output that is not its JSON, or the credential printed fails.
func (r *npmRun) wait(t *testing.T, out any) string {
	t.Helper()
	if err := <-r.done; err != nil {
		t.Fatalf("node %s: %v\nstdout %s\nstderr %s", r.name, err, r.stdout.String(), tailLines(r.stderr.Bytes(), 30))
	}
	if r.bearer != "" {
		for _, b := range [][]byte{r.stdout.Bytes(), r.stderr.Bytes()} {
			if bytes.Contains(b, []byte(r.bearer)) {
				t.Errorf("%s printed the credential", r.name)
			}
		}
	}
	if err := json.Unmarshal(r.stdout.Bytes(), out); err != nil {
		t.Fatalf("%s output is not its JSON: %v\n%s", r.name, err, r.stdout.String())
	}
	return r.stdout.String()
}

// runNPMScript runs a script to its end (startNPMScript, wait).
func runNPMScript(t *testing.T, dir, caRoot, script, bearer string, cfg, out any) string {
	t.Helper()
	return startNPMScript(t, dir, caRoot, script, bearer, cfg).wait(t, out)
}

// gqlResponse is a GraphQL answer as the Go side reads it.
type gqlResponse struct {
	Data   json.RawMessage   `json:"data"`
	Errors []json.RawMessage `json:"errors"`
}

// postGraphQL is the Go request of an operation: one POST of query and vars
// to url with bearer, through client. It returns the status and answer.
func postGraphQL(t *testing.T, client *http.Client, url, bearer, query string, vars map[string]any) (int, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var out gqlResponse
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("POST %s: %d %.300s: %v", url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// awaitSubscribers waits until the library engine has n subscribers of
// loanEvents: the client's subscription reached it through the gateway.
func awaitSubscribers(t *testing.T, events *library.LoanEvents, n int) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "loanEvents subscribers", func() error {
		if got := events.Subscribers(); got != n {
			return fmt.Errorf("loanEvents has %d subscribers, want %d", got, n)
		}
		return nil
	})
}

// loanEvent is one loanEvents event as the tests select it.
type loanEvent struct {
	Kind string `json:"kind"`
	Loan struct {
		ID   string `json:"id"`
		Book struct {
			ID string `json:"id"`
		} `json:"book"`
	} `json:"loan"`
}

// loanEventsDoc selects what loanEvent holds.
const loanEventsDoc = `subscription { loanEvents { kind loan { id book { id } } } }`

// lendAndReturn makes n loan events through the gateway at url with bearer:
// book bookID borrowed, returned, borrowed, … in this order, returned as the
// events the subscription should deliver.
func lendAndReturn(t *testing.T, url, bearer, bookID string, n int) []loanEvent {
	t.Helper()
	var want []loanEvent
	loanID := ""
	for i := range n {
		var ev loanEvent
		var st int
		var resp gqlResponse
		if i%2 == 0 {
			st, resp = postGraphQL(t, http.DefaultClient, url, bearer,
				`mutation($b: ID!) { m: borrowBook(bookId: $b) { id book { id } } }`, map[string]any{"b": bookID})
			ev.Kind = "BORROWED"
		} else {
			st, resp = postGraphQL(t, http.DefaultClient, url, bearer,
				`mutation($l: ID!) { m: returnBook(loanId: $l) { id book { id } } }`, map[string]any{"l": loanID})
			ev.Kind = "RETURNED"
		}
		var data struct {
			M struct {
				ID   string `json:"id"`
				Book struct {
					ID string `json:"id"`
				} `json:"book"`
			} `json:"m"`
		}
		if st != http.StatusOK || len(resp.Errors) != 0 || json.Unmarshal(resp.Data, &data) != nil || data.M.ID == "" {
			t.Fatalf("%s %s: %d %s %s", ev.Kind, bookID, st, resp.Data, resp.Errors)
		}
		loanID = data.M.ID
		ev.Loan.ID, ev.Loan.Book.ID = data.M.ID, data.M.Book.ID
		want = append(want, ev)
	}
	return want
}

// npmStack is the shipped Caddyfile.local (records on /v1/graphql over
// HTTPS) with a second site in front of the example library engine: the
// guard of examples/other-backend/Caddyfile (GET and POST, APQ in memory,
// graphql-transport-ws and graphql-sse subscriptions).
type npmStack struct {
	s      *stack.Stack
	libURL string // http://127.0.0.1:<port>/graphql
	libWS  string // ws://…/graphql
	events *library.LoanEvents
	keys   []string // issued, for the log check
}

// npmTiers: npmlib holds both library families, npmcatalog only catalog.
var npmTiers = []string{
	"tier npmlib 1000/m catalog loans",
	"tier npmcatalog 1000/m catalog",
}

// npmLibrarySite is the library engine's site.
const npmLibrarySite = `http://127.0.0.1:{$NPM_LIBRARY_PORT} {
	bind 127.0.0.1
	log
	route /graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			schema {$NPM_LIBRARY_SCHEMA}
			limit_argument first
			max_depth 6
			operations query mutation subscription
			methods GET POST
			family catalog books book authors
			family loans loans Mutation.borrowBook Mutation.returnBook Subscription.loanEvents
			subscriptions {
				max_per_connection 10
				max_per_key 100
				init_timeout 10s
			}
			persisted_queries {
				max_entries 1000
			}
		}
		reverse_proxy {$NPM_LIBRARY_UPSTREAM} {
			flush_interval -1
		}
	}
	handle_errors {
		header Content-Type application/json
		respond ` + "`" + `{"error":"{http.error.status_text}"}` + "`" + ` {http.error.status_code}
	}
}

`

// startNPMStack starts recordsd, the library engine and the gateway.
func startNPMStack(t *testing.T) *npmStack {
	t.Helper()
	s := stack.New(t, &bins)
	n := &npmStack{s: s, events: library.NewLoanEvents()}
	engine := library.NewHandler(library.NewCatalog(), n.events, library.Options{
		IdentitySecret: []byte(s.Getenv("CIVIC_IDENTITY_SECRET")),
		KeepAlive:      time.Hour, // no pings to answer while a test awaits a close
	})
	lib := httptest.NewServer(engine)
	t.Cleanup(lib.Close)
	port := strconv.Itoa(testenv.FreePort(t))
	s.Setenv("NPM_LIBRARY_PORT", port)
	s.Setenv("NPM_LIBRARY_SCHEMA", filepath.Join(s.Root, "examples", "other-backend", "library.graphqls"))
	s.Setenv("NPM_LIBRARY_UPSTREAM", strings.TrimPrefix(lib.URL, "http://"))
	n.libURL = "http://127.0.0.1:" + port + "/graphql"
	n.libWS = "ws://127.0.0.1:" + port + "/graphql"

	s.Prepare()
	s.StartRecordsd()
	const lastAnchor = "# Any other Host on this port: 421 JSON (misdirected.caddy).\n"
	s.StartGateway(gatewayFiles(t, s.Root, npmTiers, [2]string{lastAnchor, npmLibrarySite + lastAnchor}))
	t.Cleanup(func() { s.CheckLogs(t, n.keys...) })
	return n
}

// issue issues a live key of tier and returns it with its id.
func (n *npmStack) issue(t *testing.T, tier string) (key, id string) {
	t.Helper()
	key, id = n.s.IssueKey("npm-"+tier+"-"+testenv.RandomSuffix(6), tier, "live")
	n.keys = append(n.keys, key)
	return key, id
}
