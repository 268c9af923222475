package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
)

var signupLinkPattern = regexp.MustCompile(`https://localhost:\d+/signup/verify\?token=[A-Za-z0-9_-]+`)

// startSignupStack is the stack of Caddyfile.local with sign-up on in mode,
// its mail sent through a real SMTP server (Mailpit).
func startSignupStack(t *testing.T, mode string) (*stack.Stack, *testmailpit.Server) {
	t.Helper()
	mp := testmailpit.Start(t)
	s := stack.New(t, &bins)
	s.Prepare()
	s.Setenv("CIVICGATE_SIGNUP", mode)
	s.Setenv("CIVICGATE_SIGNUP_TIER", "free")
	s.Setenv("CIVICGATE_TERMS_URL", "https://example.org/terms")
	s.Setenv("CIVICGATE_API_URL", s.HTTPSURL+"/v1/graphql")
	s.Setenv("CIVICGATE_MAIL_FROM", "civicgate <noreply@civicgate.test>")
	s.Setenv("CIVICGATE_SMTP_URL", mp.SMTPURL())
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	return s, mp
}

// awaitSignupMail waits for the n-th mail to addr.
func awaitSignupMail(t *testing.T, mp *testmailpit.Server, addr string, n int) testmailpit.Mail {
	t.Helper()
	var m testmailpit.Mail
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("mail %d to %s", n, addr), func() error {
		ms := mp.MailsTo(t, addr)
		if len(ms) < n {
			return fmt.Errorf("%d mails", len(ms))
		}
		m = ms[n-1]
		return nil
	})
	return m
}

// TestSignupInBrowser: a person signs up in a real browser, reads the
// verification mail from a real SMTP server, opens the link, sees the first
// key once with its curl line, and the API answers that key; the key, the
// link and the session reach no log.
func TestSignupInBrowser(t *testing.T) {
	t.Parallel()
	s, mp := startSignupStack(t, "open")
	ctx := testbrowser.New(t)
	dialogs := watchDialogs(ctx)

	testbrowser.Navigate(t, ctx, s.ConsoleURL+"/signup")
	testbrowser.SendKeys(t, ctx, "#signup-email", "ada@example.org")
	testbrowser.SendKeys(t, ctx, "#signup-name", "Ada Lovelace")
	testbrowser.SendKeys(t, ctx, "#signup-org", "Analytical Engines")
	testbrowser.SendKeys(t, ctx, "#signup-use", "Tracking appropriations bills")
	testbrowser.Click(t, ctx, "#signup-terms")
	testbrowser.Click(t, ctx, "#signup-submit")
	testbrowser.WaitVisible(t, ctx, "#signup-sent")
	testbrowser.Screenshot(t, ctx, "signup-sent")

	m := awaitSignupMail(t, mp, "ada@example.org", 1)
	link := signupLinkPattern.FindString(m.Text)
	if link == "" || !strings.Contains(m.HTML, "/signup/verify?token=") {
		t.Fatalf("the verification mail holds no link: %q", m.Text)
	}
	testbrowser.Navigate(t, ctx, link)
	testbrowser.Click(t, ctx, "#signup-confirm")
	key, _ := shownKey(t, ctx)
	if curl := inputValue(t, ctx, "#curl"); !strings.Contains(curl, key) || !strings.Contains(curl, s.HTTPSURL+"/v1/graphql") {
		t.Errorf("the curl line is %q", curl)
	}
	testbrowser.Screenshot(t, ctx, "signup-key")
	if code, body := graphqlCall(t, s, key, billsDoc); code != http.StatusOK {
		t.Fatalf("the sign-up key answered %d %s", code, body)
	}
	secrets := []string{key, sessionCookie(t, ctx)}
	if tok, err := url.QueryUnescape(strings.TrimPrefix(link[strings.Index(link, "token="):], "token=")); err == nil {
		secrets = append(secrets, tok)
	}

	// The link again: refused, and the key is not shown again.
	testbrowser.Navigate(t, ctx, link)
	testbrowser.Click(t, ctx, "#signup-confirm")
	testbrowser.WaitVisible(t, ctx, "#status-text")
	if d := dialogs(); len(d) != 0 {
		t.Errorf("a script ran: %v", d)
	}
	if e := scriptErrors(ctx); len(e) != 0 {
		t.Errorf("script errors: %v", e)
	}
	s.CheckLogs(t, secrets...)
}

// TestSignupApproveInBrowser: in approve mode the person's confirmed request
// waits; an operator approves it on the Sign-ups page in a browser; the
// approval mail's link shows the person their first key, which the API
// accepts.
func TestSignupApproveInBrowser(t *testing.T) {
	t.Parallel()
	s, mp := startSignupStack(t, "approve")
	person := testbrowser.New(t)
	testbrowser.Navigate(t, person, s.ConsoleURL+"/signup")
	testbrowser.SendKeys(t, person, "#signup-email", "grace@example.org")
	testbrowser.SendKeys(t, person, "#signup-name", "Grace Hopper")
	testbrowser.SendKeys(t, person, "#signup-org", "Compilers")
	testbrowser.SendKeys(t, person, "#signup-use", "Lobbying research")
	testbrowser.Click(t, person, "#signup-terms")
	testbrowser.Click(t, person, "#signup-submit")
	testbrowser.WaitVisible(t, person, "#signup-sent")
	testbrowser.Navigate(t, person, signupLinkPattern.FindString(awaitSignupMail(t, mp, "grace@example.org", 1).Text))
	testbrowser.Click(t, person, "#signup-confirm")
	testbrowser.WaitVisible(t, person, "#signup-waiting")

	operator := testbrowser.New(t)
	signIn(t, s, operator, "", "op@civicgate.test", "operator")
	testbrowser.Click(t, operator, "#nav-signups")
	testbrowser.WaitVisible(t, operator, "table")
	if row := testbrowser.Text(t, operator, "tbody tr"); !strings.Contains(row, "grace@example.org") || !strings.Contains(row, "Lobbying research") {
		t.Fatalf("the queue's row: %q", row)
	}
	testbrowser.Screenshot(t, operator, "signup-queue")
	testbrowser.Click(t, operator, "tbody tr form button")
	testbrowser.WaitVisible(t, operator, "#notice")
	testbrowser.WaitVisible(t, operator, "#no-signups")

	approved := awaitSignupMail(t, mp, "grace@example.org", 2)
	if !strings.Contains(approved.Subject, "approved") {
		t.Fatalf("the second mail is %q", approved.Subject)
	}
	testbrowser.Navigate(t, person, signupLinkPattern.FindString(approved.Text))
	testbrowser.Click(t, person, "#signup-confirm")
	key, _ := shownKey(t, person)
	if code, body := graphqlCall(t, s, key, billsDoc); code != http.StatusOK {
		t.Fatalf("the approved sign-up's key answered %d %s", code, body)
	}
	s.CheckLogs(t, key, sessionCookie(t, person), sessionCookie(t, operator))
}
