package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
)

// deprecatedReason is the reason the test schema gives BillsPage.nextCursor:
// markup the console must show as text.
const deprecatedReason = `<b>page</b> with "cursor" & <img src=x onerror=alert(1)>`

// schemaDeprecating writes a copy of the records schema in which
// BillsPage.nextCursor is deprecated with deprecatedReason, and returns its
// path (the guard's schema, CIVICGATE_SCHEMA; recordsd keeps its own).
func schemaDeprecating(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "backend", "schema", "records.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	const field = "type BillsPage {\n  items: [Bill!]!\n  \"Cursor of the next page; null on the final page.\"\n  nextCursor: String\n"
	if strings.Count(string(b), field) != 1 {
		t.Fatalf("records.graphqls holds BillsPage's nextCursor not exactly once as\n%s", field)
	}
	reason, _ := json.Marshal(deprecatedReason)
	s := strings.Replace(string(b), field, strings.TrimSuffix(field, "\n")+" @deprecated(reason: "+string(reason)+")\n", 1)
	path := filepath.Join(t.TempDir(), "records.graphqls")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConsoleOperations (docs/design.md D77): two organizations' keys run
// operations through the real gateway, one reading a field the guard's
// schema deprecates; in a real browser, acme's member sees acme's
// operations, the fields they read and the deprecated field with its
// reason as text — never globex's operations — switches the window, and
// gets "Not found" for globex's page.
func TestConsoleOperations(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Prepare()
	acmeKey, _ := s.IssueKey("acme", "enterprise", "live")
	globexKey, _ := s.IssueKey("globex", "enterprise", "live")
	s.Setenv("CIVICGATE_SCHEMA", schemaDeprecating(t, s.Root))
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	secrets := []string{acmeKey, globexKey}

	run := func(key, doc string, wantDeprecation bool) {
		t.Helper()
		resp, body := do(t, s, http.MethodPost, "/v1/graphql", key, "application/json", strings.NewReader(doc))
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"items"`) {
			t.Fatalf("%s: %d %s", doc, resp.StatusCode, body)
		}
		if got := resp.Header.Get("Deprecation") != ""; got != wantDeprecation {
			t.Fatalf("%s: Deprecation header %q, want one: %v", doc, resp.Header.Get("Deprecation"), wantDeprecation)
		}
	}
	const acmePaged = `{"query":"query AcmePaged { bills(input:{limit:1}) { items { id } nextCursor } }"}`
	const acmeIDs = `{"query":"query AcmeIds { bills(input:{limit:1}) { items { id } } }"}`
	const globexPaged = `{"query":"query GlobexPaged { bills(input:{limit:2}) { items { id officialTitle } nextCursor } }"}`
	run(acmeKey, acmePaged, true)
	run(acmeKey, acmePaged, true)
	run(acmeKey, acmeIDs, false)
	run(globexKey, globexPaged, true)

	// The flush writes the operation hours and records in one transaction.
	stack.WaitFor(t, 30*time.Second, "acme's and globex's operations counted", func() error {
		for org, want := range map[string]int{"acme": 3, "globex": 1} {
			out, err := s.RunErr(s.Bins.Civicgate, "usage", "operations", "--org", org, "--since", "1h", "--json")
			if err != nil {
				return fmt.Errorf("usage operations: %v %s", err, out)
			}
			var a struct{ Operations []struct{ Requests int } }
			if err := json.Unmarshal([]byte(out), &a); err != nil {
				return err
			}
			n := 0
			for _, o := range a.Operations {
				n += o.Requests
			}
			if n != want {
				return fmt.Errorf("%s: %d requests counted, want %d", org, n, want)
			}
		}
		return nil
	})

	ctx := testbrowser.New(t)
	dialogs := watchDialogs(ctx)
	tok, org := signIn(t, s, ctx, "acme", "viewer@acme.example", "viewer")
	secrets = append(secrets, tok, sessionCookie(t, ctx))

	testbrowser.Navigate(t, ctx, s.ConsoleURL+"/orgs/"+org+"/")
	testbrowser.Click(t, ctx, `nav a[href$="/operations"]`)
	testbrowser.WaitVisible(t, ctx, "#deprecated")
	row := testbrowser.Text(t, ctx, "#deprecated tbody tr.deprecated-row")
	for _, want := range []string{"BillsPage.nextCursor", deprecatedReason, "AcmePaged"} {
		if !strings.Contains(row, want) {
			t.Errorf("the deprecated row %q does not show %q", row, want)
		}
	}
	if html := outerHTMLOf(t, ctx, "#deprecated"); strings.Contains(html, "<img") || strings.Contains(html, "<b>") {
		t.Errorf("the deprecated table holds the reason's markup as elements:\n%s", html)
	}
	ops := testbrowser.Text(t, ctx, "#operations tbody")
	if !strings.Contains(ops, "AcmePaged") || !strings.Contains(ops, "AcmeIds") {
		t.Errorf("operations table %q, want AcmePaged and AcmeIds", ops)
	}
	fields := testbrowser.Text(t, ctx, "#fields tbody")
	if !strings.Contains(fields, "Query.bills") || !strings.Contains(fields, "BillsPage.nextCursor") {
		t.Errorf("fields table %q", fields)
	}
	if page := testbrowser.Text(t, ctx, "main"); strings.Contains(page, "Globex") || strings.Contains(page, "Bill.officialTitle") {
		t.Errorf("acme's page shows globex's operation or field:\n%s", page)
	}
	testbrowser.Screenshot(t, ctx, "console-operations")

	testbrowser.SetValue(t, ctx, "#window", "30d")
	testbrowser.Click(t, ctx, "#operations-form button")
	stack.WaitFor(t, 20*time.Second, "the 30-day page", func() error {
		if loc := testbrowser.Location(t, ctx); !strings.HasSuffix(loc, "/operations?window=30d") {
			return fmt.Errorf("the page is %s", loc)
		}
		return nil
	})
	testbrowser.WaitVisible(t, ctx, "#deprecated")
	if html := outerHTMLOf(t, ctx, "#window"); !strings.Contains(html, `<option value="30d" selected="">`) {
		t.Errorf("the 30-day window is not the one selected:\n%s", html)
	}
	if !strings.Contains(testbrowser.Text(t, ctx, "#deprecated tbody"), "BillsPage.nextCursor") {
		t.Error("the 30-day window lost the deprecated field")
	}

	testbrowser.Navigate(t, ctx, s.ConsoleURL+"/orgs/"+orgIDByName(t, s, "globex")+"/operations")
	if got := testbrowser.Title(t, ctx); !strings.HasPrefix(got, "Not found") {
		t.Errorf("globex's operations page from acme's member is titled %q", got)
	}
	if d := dialogs(); len(d) != 0 {
		t.Errorf("a script ran: %v", d)
	}
	if e := scriptErrors(ctx); len(e) != 0 {
		t.Errorf("script errors: %v", e)
	}
	s.CheckLogs(t, secrets...)
}
