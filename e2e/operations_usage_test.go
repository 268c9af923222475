package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Usage per key and operation (docs/design.md D70): the same query sent by
// POST and by GET (the guard admits both; recordsd answers the GET 405) is
// one operation — one row of `civicgate usage operations` with 2 requests,
// 1 error — and its access log lines name the operation and its document
// hash beside the key id. The admin endpoint answers what the command does.

// routesWithGET copies the shipped Caddyfiles into a temporary directory
// with the guard of routes.caddy accepting GET too, and returns the copy of
// Caddyfile.local.
func routesWithGET(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(root, "caddyfile", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped Caddyfiles: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "routes.caddy" {
			const old = "\t\toperations query\n"
			if n := bytes.Count(b, []byte(old)); n != 1 {
				t.Fatalf("routes.caddy holds %q %d times, want once", old, n)
			}
			b = bytes.Replace(b, []byte(old), []byte(old+"\t\tmethods GET POST\n"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "Caddyfile.local")
}

func TestUsageOperationPostAndGet(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	s.StartRecordsd()
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	gw := s.StartGateway(routesWithGET(t, s.Root))
	key, id := s.IssueKey("opsco", "free", "live")

	const query = `query RecentBills { bills(input: {limit: 2}) { items { id } } }`
	send := func(req *http.Request) (int, []byte) {
		t.Helper()
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, body
	}
	post, _ := http.NewRequest(http.MethodPost, s.HTTPSURL+"/v1/graphql", strings.NewReader(fmt.Sprintf(`{"query":%q}`, query)))
	post.Header.Set("Content-Type", "application/json")
	if code, body := send(post); code != http.StatusOK || !bytes.Contains(body, []byte(`"items"`)) {
		t.Fatalf("POST: %d %s", code, body)
	}
	// The guard admits the GET; recordsd takes POST only and answers 405,
	// so the same operation counts one request answered with an error.
	get, _ := http.NewRequest(http.MethodGet, s.HTTPSURL+"/v1/graphql?query="+url.QueryEscape(query), nil)
	if code, body := send(get); code != http.StatusMethodNotAllowed || !bytes.Contains(body, []byte("must use POST")) {
		t.Fatalf("GET: %d %s, want recordsd's 405", code, body)
	}

	type operation struct {
		KeyID    string `json:"key_id"`
		Hash     string `json:"hash"`
		Type     string `json:"type"`
		Name     string `json:"name"`
		Requests int64  `json:"requests"`
		Errors   int64  `json:"errors"`
	}
	var ops []operation
	stack.WaitFor(t, 30*time.Second, "the operation's row with both requests", func() error {
		out, err := s.RunErr(s.Bins.Civicgate, "usage", "operations", "--org", "opsco", "--since", "1h", "--json")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var a struct {
			Operations []operation `json:"operations"`
		}
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		ops = a.Operations
		if len(ops) != 1 || ops[0].Requests != 2 {
			return fmt.Errorf("operations %+v, want one with 2 requests", ops)
		}
		return nil
	})
	op := ops[0]
	if op.KeyID != id || op.Name != "RecentBills" || op.Type != "query" || op.Errors != 1 || len(op.Hash) != 64 {
		t.Fatalf("operation %+v", op)
	}

	// The admin endpoint answers the same, as JSON (admin.api.civic_usage).
	resp, err := http.Get("http://" + s.Getenv("CIVICGATE_ADMIN") + "/civicgate/usage/operations?org=opsco&since=1h")
	if err != nil {
		t.Fatal(err)
	}
	adminBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var adminAnswer struct {
		Operations []operation `json:"operations"`
	}
	if err := json.Unmarshal(adminBody, &adminAnswer); resp.StatusCode != http.StatusOK || err != nil ||
		len(adminAnswer.Operations) != 1 || adminAnswer.Operations[0] != op {
		t.Fatalf("admin answer %d %s (%v), want %+v", resp.StatusCode, adminBody, err, op)
	}

	// The access log lines of both requests name the operation and its hash.
	type line struct {
		KeyID     string `json:"key_id"`
		Operation string `json:"operation"`
		Hash      string `json:"document_hash"`
		Req       struct {
			Method string `json:"method"`
			URI    string `json:"uri"`
		} `json:"request"`
	}
	stack.WaitFor(t, 30*time.Second, "both access log lines", func() error {
		f, err := os.Open(gw.Log)
		if err != nil {
			return err
		}
		defer f.Close()
		seen := map[string]bool{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) != nil || !strings.HasPrefix(l.Req.URI, "/v1/graphql") {
				continue
			}
			if l.KeyID == id && l.Operation == "RecentBills" && l.Hash == op.Hash {
				seen[l.Req.Method] = true
			}
		}
		if !seen["GET"] || !seen["POST"] {
			return fmt.Errorf("access log lines naming the operation: %v", seen)
		}
		return nil
	})
	s.CheckLogs(t, key)

	// What the operation read (the guard's shape, docs/design.md D69): its
	// fields, each counted with the operation's two requests.
	out := s.Run(s.Bins.Civicgate, "usage", "fields", "--org", "opsco", "--json")
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
	for _, c := range []string{"Query.bills", "Query.bills(input:)", "Bill.id"} {
		if got[c] != 2 {
			t.Fatalf("fields %v: want %s with 2 requests", got, c)
		}
	}

	// civicgate schema check reads the recorded operation from the same
	// tables: a candidate without Bill.id breaks it, for exactly this key.
	src, err := os.ReadFile(filepath.Join(s.Root, "backend", "schema", "records.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(t.TempDir(), "current.graphqls")
	candidate := filepath.Join(t.TempDir(), "candidate.graphqls")
	dropped := strings.Replace(string(src), "  id: ID!\n  \"Congress number.\"", "  replacementId: ID\n  \"Congress number.\"", 1)
	if dropped == string(src) || strings.Count(dropped, "replacementId") != 1 {
		t.Fatal("could not drop Bill.id from the schema")
	}
	if err := os.WriteFile(current, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(candidate, []byte(dropped), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := s.RunErr(s.Bins.Civicgate, "schema", "check", current, "--since", "1h"); err != nil {
		t.Fatalf("the current schema: %v\n%s", err, out)
	}
	out, err = s.RunErr(s.Bins.Civicgate, "schema", "check", candidate, "--since", "1h", "--json")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("a candidate without Bill.id: %v, want exit 1\n%s", err, out)
	}
	var check struct {
		ByKey []struct {
			OrgID      string `json:"orgId"`
			KeyID      string `json:"keyId"`
			Operations []struct {
				Hash   string   `json:"hash"`
				Count  int64    `json:"count"`
				Errors []string `json:"errors"`
			} `json:"operations"`
		} `json:"byKey"`
	}
	if err := json.Unmarshal([]byte(out), &check); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(check.ByKey) != 1 || check.ByKey[0].KeyID != id || len(check.ByKey[0].Operations) != 1 ||
		check.ByKey[0].Operations[0].Hash != op.Hash || check.ByKey[0].Operations[0].Count != 2 ||
		!strings.Contains(strings.Join(check.ByKey[0].Operations[0].Errors, " "), `Cannot query field "id" on type "Bill"`) {
		t.Fatalf("schema check: %s", out)
	}
}
