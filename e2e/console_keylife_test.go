package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
)

// TestConsoleKeyLifecycle: an admin issues a key with a name, an expiry and
// labels in a real browser (docs/design.md D71); the page announces when it
// expires, the key works, and the keys table shows its name, labels and
// expiry as text — the markup in them neither runs nor becomes elements.
func TestConsoleKeyLifecycle(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Prepare()
	k0, _ := s.IssueKey("acme", "enterprise", "live")
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	const name = `Nightly <b>export</b> & "co"`
	const label = `<img src=x onerror=alert(1)>`
	secrets := []string{k0}

	ctx := testbrowser.New(t)
	dialogs := watchDialogs(ctx)
	tok, org := signIn(t, s, ctx, "acme", "ada@acme.example", "admin")
	secrets = append(secrets, tok, sessionCookie(t, ctx))

	testbrowser.Navigate(t, ctx, s.ConsoleURL+"/orgs/"+org+"/keys")
	testbrowser.SetValue(t, ctx, "#issue-env", "live")
	testbrowser.SendKeys(t, ctx, "#issue-name", name)
	testbrowser.SendKeys(t, ctx, "#issue-expires", "30d")
	testbrowser.SetValue(t, ctx, "#issue-labels", "team=data\nsrc="+label)
	testbrowser.Click(t, ctx, "#issue")
	key, id := shownKey(t, ctx)
	secrets = append(secrets, key)
	if got := testbrowser.Text(t, ctx, "#expires"); !strings.Contains(got, id+" expires at ") || !strings.Contains(got, "API key expired") {
		t.Fatalf("the expiry notice says %q", got)
	}
	testbrowser.Screenshot(t, ctx, "keys-lifecycle-issued")
	if code, body := graphqlCall(t, s, key, billsDoc); code != http.StatusOK {
		t.Fatalf("the key issued with an expiry answered %d %s", code, body)
	}

	testbrowser.Navigate(t, ctx, s.ConsoleURL+"/orgs/"+org+"/keys")
	row := "#key-" + id
	if got := testbrowser.Text(t, ctx, row+" .key-name"); got != name {
		t.Errorf("name cell %q, want %q", got, name)
	}
	if got := testbrowser.Text(t, ctx, row+" .key-labels"); got != "src="+label+", team=data" {
		t.Errorf("labels cell %q", got)
	}
	if got := testbrowser.Text(t, ctx, row+" .key-expires"); !strings.HasSuffix(got, " UTC") {
		t.Errorf("expires cell %q, want a time", got)
	}
	if html := outerHTMLOf(t, ctx, row); strings.Contains(html, "<img") || strings.Contains(html, "<b>") {
		t.Errorf("the row holds the markup as elements:\n%s", html)
	}
	testbrowser.Screenshot(t, ctx, "keys-lifecycle-listed")
	if d := dialogs(); len(d) != 0 {
		t.Errorf("a script ran: %v", d)
	}
	if e := scriptErrors(ctx); len(e) != 0 {
		t.Errorf("script errors: %v", e)
	}
	s.CheckLogs(t, secrets...)
}
