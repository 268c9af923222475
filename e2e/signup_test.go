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
