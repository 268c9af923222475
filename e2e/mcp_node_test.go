package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestMCPNode: the TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// e2e/mcp-node/package-lock.json) as a client of the built gateway's
// /v1/mcp — e2e/mcp-node/client.mjs connects with StreamableHTTPClientTransport
// and the key as a bearer, lists the tools and calls one. Its tool list is
// the go-sdk client's for the same key, definitions included, and its
// call's structuredContent is what POST /v1/graphql answers the same
// operation. The packages are installed with `npm ci` into a copy of the
// directory of this test's own, so concurrent runs share nothing but npm's
// cache; npm failing (no registry) fails the test, never skips it.
func TestMCPNode(t *testing.T) {
	t.Parallel()
	dir := nodeClient(t)
	s := startMCPStack(t)
	ops := shippedManifest(t, s.Root)
	free, _ := s.IssueKey("mcpnodefree", "free", "live")
	paid, _ := s.IssueKey("mcpnodepaid", "paid_beta", "live")
	defer func() { s.CheckLogs(t, free, paid) }()

	var first struct {
		Bills struct {
			Items []struct {
				ID       string `json:"id"`
				Congress int    `json:"congress"`
			} `json:"items"`
		} `json:"bills"`
	}
	if err := json.Unmarshal(graphqlOp(t, s, paid, ops["SearchBills"], map[string]any{"first": 1}), &first); err != nil || len(first.Bills.Items) != 1 {
		t.Fatalf("no bill to ask for: %v %+v", err, first)
	}
	bill := first.Bills.Items[0]

	for _, c := range []struct {
		name, key, tool, op string
		args                map[string]any
	}{
		{"free", free, "search_bills", "SearchBills", map[string]any{"congress": bill.Congress, "first": 3}},
		{"paid_beta", paid, "get_bill", "GetBill", map[string]any{"id": bill.ID}},
		{"paid_beta", paid, "search_regulatory_filings", "SearchRegulatoryFilings", map[string]any{"first": 2}},
	} {
		out := runNodeClient(t, s, dir, c.key, c.tool, c.args)
		// The tool list: the go-sdk client's for the same key, each tool's
		// definition (schemas, descriptions) as the TypeScript SDK parsed it.
		goTools, err := json.Marshal(mcpTools(t, mcpConnect(t, s, c.key)))
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(out.Tools, goTools) {
			t.Errorf("%s: the TypeScript client lists %s\nthe go-sdk client %s", c.name, out.Tools, goTools)
		}
		var names []struct{ Name string }
		_ = json.Unmarshal(out.Tools, &names)
		if want := toolsOfTier(t, s.Root, c.name); len(names) != len(want) {
			t.Errorf("%s: the TypeScript client lists %d tools, want %v", c.name, len(names), want)
		}
		if out.Call.Result.IsError || len(out.Call.Result.StructuredContent) == 0 {
			t.Fatalf("%s %s: %s", c.name, c.tool, out.raw)
		}
		want := graphqlOp(t, s, c.key, ops[c.op], c.args)
		if !sameJSON(out.Call.Result.StructuredContent, want) {
			t.Errorf("%s %s %v: structuredContent %s\nPOST /v1/graphql data %s", c.name, c.tool, c.args, out.Call.Result.StructuredContent, want)
		}
		if len(out.Call.Result.Content) != 1 || out.Call.Result.Content[0].Type != "text" ||
			!sameJSON([]byte(out.Call.Result.Content[0].Text), want) {
			t.Errorf("%s %s: content %+v, want the data as one text", c.name, c.tool, out.Call.Result.Content)
		}
		if out.ProtocolVersion != "2025-11-25" || !out.Session {
			t.Errorf("%s: protocol %q, session %v: want 2025-11-25 in a session", c.name, out.ProtocolVersion, out.Session)
		}
	}
}

// nodeOutput is what client.mjs prints.
type nodeOutput struct {
	raw             []byte
	Session         bool            `json:"session"`
	ProtocolVersion string          `json:"protocolVersion"`
	Tools           json.RawMessage `json:"tools"`
	Call            struct {
		Result struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			Content           []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	} `json:"call"`
}

// nodeClient copies e2e/mcp-node (package.json, the lock and client.mjs)
// into a directory of the test's own and installs the locked packages
// there with `npm ci`.
func nodeClient(t *testing.T) string {
	t.Helper()
	return npmInstall(t, "mcp-node", "the pinned @modelcontextprotocol/sdk")
}

// runNodeClient runs client.mjs against the stack's /v1/mcp with key,
// trusting the stack's CA, and decodes its output; a non-zero exit fails.
func runNodeClient(t *testing.T, s *stack.Stack, dir, key, tool string, args map[string]any) nodeOutput {
	t.Helper()
	argsJSON, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", s.HTTPSURL+mcpPath, key, tool, string(argsJSON))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+s.CARoot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs %s %s: %v\n%s", tool, argsJSON, err, stderr.String())
	}
	for _, b := range [][]byte{stdout.Bytes(), stderr.Bytes()} {
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("client.mjs printed the key")
		}
	}
	out := nodeOutput{raw: stdout.Bytes()}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client.mjs output is not its JSON: %v\n%s", err, stdout.String())
	}
	return out
}

// tailLines is the last n lines of b.
func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
