package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
	"github.com/civicgate/civicgate/internal/testkit/testoidc"
)

// TestConsoleOIDC signs in through a real OpenID Connect provider
// (internal/testkit/testoidc) in a real browser: a verified email of the mapped
// domain becomes the organization's admin, an account no rule maps is
// refused, and a member of the mapped group becomes an operator who sees
// every organization.
func TestConsoleOIDC(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Prepare()
	key, _ := s.IssueKey("zorg", "paid_beta", "live")
	other, _ := s.IssueKey("yorg", "free", "live")
	p := testoidc.Start(t, s.ConsoleURL+"/auth/callback")
	p.AddUser(t, testoidc.User{Username: "eve", Password: "eve-password-1", Email: "eve@elsewhere.example",
		EmailVerified: true, Groups: []string{"staff"}})
	p.AddUser(t, testoidc.User{Username: "opal", Password: "opal-password-1", Email: "opal@ops.example",
		EmailVerified: true, Groups: []string{"staff", "civic-ops"}})
	s.StartGateway(oidcCaddyfile(t, s, p, "map email_domain zitadel.ch zorg admin", "map claim groups civic-ops * operator"))
	ctx := testbrowser.New(t)

	// The provider's first user, of the mapped domain: zorg's admin.
	oidcSignIn(t, s, ctx, p.Username, p.Password)
	testbrowser.WaitVisible(t, ctx, "#who")
	if got := testbrowser.Text(t, ctx, "#who"); got != p.Email+" (admin)" {
		t.Fatalf("#who is %q, want %q", got, p.Email+" (admin)")
	}
	if got := testbrowser.Text(t, ctx, "#org-name"); got != "zorg" {
		t.Fatalf("signed in to organization %q, want zorg", got)
	}
	if loc := testbrowser.Location(t, ctx); !strings.HasPrefix(loc, s.ConsoleURL+"/orgs/") {
		t.Fatalf("signed in at %s, want the organization's overview", loc)
	}
	testbrowser.Click(t, ctx, `form[action="/signout"] button`)
	runBrowser(t, ctx, "signed out", chromedp.WaitNotPresent("#who", chromedp.ByQuery))

	// An account of another domain, in no mapped group: refused.
	oidcSignIn(t, s, ctx, "eve", "eve-password-1")
	testbrowser.WaitVisible(t, ctx, "#status-text")
	if got := testbrowser.Text(t, ctx, "#status-text"); !strings.Contains(got, "not a member of any organization") {
		t.Fatalf("an unmapped account got %q, want the not-a-member page", got)
	}
	testbrowser.Screenshot(t, ctx, "refused-not-member")
	if got := sessionCookies(t, ctx); got != 0 {
		t.Fatalf("the refused account holds %d session cookies", got)
	}

	// A member of the civic-ops group: an operator, sent to the organizations list.
	oidcSignIn(t, s, ctx, "opal", "opal-password-1")
	testbrowser.WaitVisible(t, ctx, "#orgs")
	if loc := testbrowser.Location(t, ctx); loc != s.ConsoleURL+"/orgs" {
		t.Fatalf("the operator landed on %s, want /orgs", loc)
	}
	if got := testbrowser.Text(t, ctx, "#who"); got != "opal@ops.example (operator)" {
		t.Fatalf("#who is %q, want the operator", got)
	}
	list := testbrowser.Text(t, ctx, "#orgs")
	for _, org := range []string{"zorg", "yorg"} {
		if !strings.Contains(list, org) {
			t.Errorf("the organizations list lacks %s:\n%s", org, list)
		}
	}
	testbrowser.Screenshot(t, ctx, "orgs-operator")

	s.CheckLogs(t, key, other, p.ClientSecret)
}

// oidcSignIn starts an OIDC sign-in from the console's sign-in page and
// fills the provider's login form; the browser then returns to the console.
func oidcSignIn(t *testing.T, s *stack.Stack, ctx context.Context, username, password string) {
	t.Helper()
	testbrowser.Navigate(t, ctx, s.ConsoleURL+"/signin")
	testbrowser.Click(t, ctx, "#oidc-signin")
	testbrowser.WaitVisible(t, ctx, testoidc.UsernameField)
	testbrowser.SetValue(t, ctx, testoidc.UsernameField, username)
	testbrowser.SetValue(t, ctx, testoidc.PasswordField, password)
	testbrowser.Click(t, ctx, testoidc.SubmitButton)
	runBrowser(t, ctx, "back on the console", chromedp.WaitNotPresent(testoidc.LoginForm, chromedp.ByQuery))
}

// sessionCookies counts the browser's console session cookies.
func sessionCookies(t *testing.T, ctx context.Context) int {
	t.Helper()
	n := 0
	for _, c := range testbrowser.Cookies(t, ctx) {
		if c.Name == "__Host-civicgate_session" {
			n++
		}
	}
	return n
}

// oidcCaddyfile writes Caddyfile.local and the snippets it imports into the
// test's directory, with an oidc block for the provider (and the given map
// rules) in the console's civic_console, and returns its path.
func oidcCaddyfile(t *testing.T, s *stack.Stack, p *testoidc.Provider, rules ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"Caddyfile.local", "servers.caddy", "routes.caddy", "families.caddy", "tiers.caddy", "event-families.caddy", "misdirected.caddy", "console.caddy", "tracing-off.caddy", "tracing-upstream-off.caddy", "mcp-tools.json"} {
		b, err := os.ReadFile(filepath.Join(s.Root, "caddyfile", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "console.caddy" {
			const anchor = "\timport tiers.caddy\n"
			if !strings.Contains(string(b), anchor) {
				t.Fatalf("console.caddy has no %q line to put the oidc block after", anchor)
			}
			block := "\toidc {\n\t\tissuer " + p.Issuer + "\n\t\tclient_id " + p.ClientID + "\n\t\tclient_secret " + p.ClientSecret +
				"\n\t\tredirect_url " + s.ConsoleURL + "/auth/callback\n\t\t" + strings.Join(rules, "\n\t\t") + "\n\t}\n"
			b = []byte(strings.Replace(string(b), anchor, anchor+block, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "Caddyfile.local")
}
