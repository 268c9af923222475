package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
)

// testJWTConsoleUsage: the requests of a token whose org claim names an
// organization of the store appear on that organization's console usage
// page, in a real browser: the subject is offered beside the keys and its
// own chart totals its requests (docs/operations.md "The organization
// console").
func testJWTConsoleUsage(t *testing.T, g *jwtStack, sfx string) {
	s := g.s
	name := "jwt-console-" + sfx
	s.IssueKey(name, "free", "live") // creates the organization
	orgID := orgIDByName(t, s, name)
	client := "svc-console-" + sfx
	g.client(t, client, map[string]any{"plan": "enterprise", "org_id": orgID})
	subject := "jwt:sub:" + client
	tok := g.token(t, client)
	const sent = 3
	for range sent {
		if x := getBills(t, s, tok); x.status != http.StatusOK {
			t.Fatalf("GET /bills with the token: %d %s", x.status, x.body)
		}
	}

	ctx := testbrowser.New(t)
	cookieTok, _ := signIn(t, s, ctx, name, "viewer@"+name+".example", "viewer")
	g.keep(cookieTok)
	usagePage := s.ConsoleURL + "/orgs/" + orgID + "/usage"
	// Usage is flushed every second (CIVICGATE_USAGE_FLUSH): reload until the subject is offered.
	stack.WaitFor(t, 30*time.Second, "the token subject on the usage page", func() error {
		testbrowser.Navigate(t, ctx, usagePage)
		opts := outerHTMLOf(t, ctx, "#key")
		if !strings.Contains(opts, `value="`+subject+`"`) {
			return fmt.Errorf("no option for %s in %s", subject, opts)
		}
		return nil
	})
	opts := outerHTMLOf(t, ctx, "#key")
	if !strings.Contains(opts, `<optgroup label="Access-token subjects">`) || !strings.Contains(opts, subject+" (3 requests)") {
		t.Fatalf("the subject is not offered with its count in its group:\n%s", opts)
	}
	testbrowser.Navigate(t, ctx, usagePage+"?key="+url.QueryEscape(subject))
	if got := testbrowser.Text(t, ctx, "#total-admitted"); got != fmt.Sprint(sent) {
		t.Fatalf("#total-admitted of %s is %q, want %d", subject, got, sent)
	}
	testbrowser.WaitVisible(t, ctx, "#chart svg")
	if chart := outerHTMLOf(t, ctx, "#chart"); !strings.Contains(chart, "access-token subject "+subject) {
		t.Fatalf("the chart is not titled for the subject:\n%.1500s", chart)
	}
	testbrowser.Screenshot(t, ctx, "usage-token-subject")
}
