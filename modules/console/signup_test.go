package console

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// signupConfig is the test gateway of gateway_test.go with a signup block
// on the console and the rate limiter's store in Redis.
func signupConfig(apiPort, consolePort, httpsPort int, redisAddr, prefix, mode, mailLine string) string {
	return fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[4]d
	grace_period 1ns
	civic_auth {
		keys postgres {env.CIVIC_CONSOLE_TEST_DSN}
		environment live
		identity_secret {env.CIVIC_CONSOLE_TEST_SECRET}
		cache_ttl 50ms
		negative_cache_ttl 50ms
		%[5]s
	}
	civic_webhooks {
		database {env.CIVIC_CONSOLE_TEST_DSN}
		secret_key {env.CIVIC_CONSOLE_TEST_SECRET}
		deliver off
		%[5]s
	}
	civic_rate_limit {
		redis redis://%[6]s
		key_prefix %[7]s
	}
	civic_mail {
		database {env.CIVIC_CONSOLE_TEST_DSN}
		from "Civic Gate <noreply@civicgate.test>"
		site_url http://localhost:%[3]d
		%[9]s
	}
}
http://localhost:%[2]d {
	@webhooks path /v1/changes /v1/webhook-endpoints /v1/webhook-endpoints/*
	handle @webhooks {
		civic_auth {
			require_family changes
		}
		civic_webhooks
	}
}
http://localhost:%[3]d {
	civic_console {
		database {env.CIVIC_CONSOLE_TEST_DSN}
		%[5]s
		signup {
			mode %[8]s
			tier paid
			terms_url https://civicgate.test/terms
			api_url http://localhost:%[2]d/v1/graphql
			site_url http://localhost:%[3]d
			limit_ip 100/1h
			limit_address 2/1h
			limit_domain 5/1h
			deny_domains blocked.test
		}
	}
}
`, adminPort, apiPort, consolePort, httpsPort, testTiers, redisAddr, prefix, mode, mailLine)
}

func startSignupGateway(t *testing.T, mode string) (*gateway, *testmailpit.Server) {
	t.Helper()
	mp := testmailpit.Start(t)
	return startSignupGatewayMail(t, mode, "smtp "+mp.SMTPURL()), mp
}

// startSignupGatewayMail starts the sign-up gateway with mailLine (smtp … or
// folder …) in its civic_mail block.
func startSignupGatewayMail(t *testing.T, mode, mailLine string) *gateway {
	t.Helper()
	_, prefix := testenv.Redis(t)
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, changeEventsDDL); err != nil {
		t.Fatal(err)
	}
	if err := consolestore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CIVIC_CONSOLE_TEST_DSN", dsn)
	t.Setenv("CIVIC_CONSOLE_TEST_SECRET", "console-test-material-0123456789abcdef-0123")
	apiPort, consolePort := testenv.FreePort(t), testenv.FreePort(t)
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	tester.InitServer(signupConfig(apiPort, consolePort, testenv.FreePort(t), testenv.RedisAddr(), prefix, mode, mailLine), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return &gateway{pool: pool, dsn: dsn, api: fmt.Sprintf("http://localhost:%d", apiPort), console: fmt.Sprintf("http://localhost:%d", consolePort),
		client: &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signupTemplates are the sign-up pages' templates; the tests below render
// each and check it shows no repository path (TestNoRepositoryPathsInPages
// renders the others).
var signupTemplates = []string{"signup", "signup_sent", "signup_link", "signup_waiting", "signup_key", "signup_queue"}

// pageText checks a sign-up page as TestNoRepositoryPathsInPages checks
// the others, and returns it.
func pageText(t *testing.T, r reply) reply {
	t.Helper()
	for _, m := range repositoryPath.FindAllString(r.body, -1) {
		t.Errorf("a sign-up page shows the repository path %q", m)
	}
	return r
}

var signupLinkRE = regexp.MustCompile(`http://localhost:\d+/signup/verify\?token=[A-Za-z0-9_-]+`)

// awaitMail waits for the n-th mail to addr and returns it.
func awaitMail(t *testing.T, mp *testmailpit.Server, addr string, n int) testmailpit.Mail {
	t.Helper()
	var got testmailpit.Mail
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("mail %d to %s", n, addr), func() error {
		ms := mp.MailsTo(t, addr)
		if len(ms) < n {
			return fmt.Errorf("%d mails", len(ms))
		}
		got = ms[n-1]
		return nil
	})
	return got
}

func signupFields(email, name string) map[string]string {
	return map[string]string{"email": email, "name": name, "organization": "Acme Research", "intended_use": "Tracking bills", "terms": "accept"}
}

func (g *gateway) signup(t *testing.T, f map[string]string) reply {
	t.Helper()
	v := form()
	for k, x := range f {
		v.Set(k, x)
	}
	return pageText(t, g.consoleDo(t, "", http.MethodPost, "/signup", v))
}

// useSignupLink opens a mailed link (the GET shows a button) and posts it.
func (g *gateway) useSignupLink(t *testing.T, link string) (reply, []*http.Cookie) {
	t.Helper()
	page := pageText(t, g.consoleDo(t, "", http.MethodGet, strings.TrimPrefix(link, g.console), nil))
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(page.body)
	if page.code != http.StatusOK || m == nil {
		t.Fatalf("link page: %d\n%.2000s", page.code, page.body)
	}
	req, _ := http.NewRequest(http.MethodPost, g.console+"/signup/verify", strings.NewReader(form("token", html.UnescapeString(m[1])).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", g.console)
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(t, resp))
	return pageText(t, reply{resp.StatusCode, b.String()}), resp.Cookies()
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

var keyValueRE = regexp.MustCompile(`id="new-key" readonly value="([^"]+)"`)

// TestSignupOpen: a sign-up mails a single-use link (multipart, nothing
// secret but the link); opening it makes an organization on the sign-up
// tier with its first key, named and labelled, shown once, which the API
// accepts, and an admin session; the link does not work twice; a second
// sign-up for the address answers the same page and makes nothing; every
// step is in the audit log.
func TestSignupOpen(t *testing.T) {
	g, mp := startSignupGateway(t, SignupOpen)
	if r := g.consoleDo(t, "", http.MethodGet, "/signin", nil); !strings.Contains(r.body, `href="/signup"`) {
		t.Errorf("the sign-in page does not offer sign-up")
	}
	page := pageText(t, g.consoleDo(t, "", http.MethodGet, "/signup", nil))
	if page.code != http.StatusOK || !strings.Contains(page.body, "https://civicgate.test/terms") {
		t.Fatalf("form: %d\n%.2000s", page.code, page.body)
	}
	r := g.signup(t, signupFields("Ada@Example.org", "Ada"))
	if r.code != http.StatusOK || !strings.Contains(r.body, `id="signup-sent"`) {
		t.Fatalf("sign-up: %d\n%.2000s", r.code, r.body)
	}
	m := awaitMail(t, mp, "ada@example.org", 1)
	link := signupLinkRE.FindString(m.Text)
	if link == "" || !strings.Contains(m.HTML, html.EscapeString(link)) || !strings.HasPrefix(strings.Join(m.Headers["Content-Type"], ""), "multipart/alternative") {
		t.Fatalf("verification mail: %+v", m)
	}
	done, cookies := g.useSignupLink(t, link)
	km := keyValueRE.FindStringSubmatch(done.body)
	if done.code != http.StatusOK || km == nil || !strings.Contains(done.body, "curl -H") {
		t.Fatalf("verify: %d\n%.3000s", done.code, done.body)
	}
	key := km[1]
	var session string
	for _, c := range cookies {
		if c.Name == SessionCookie {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatal("no session after sign-up")
	}
	keys, err := keystore.List(t.Context(), g.pool, keystore.ListFilter{})
	if err != nil || len(keys) != 1 || keys[0].Tier != "paid" || keys[0].Name != "first key" || keys[0].Labels["source"] != "signup" {
		t.Fatalf("keys %+v %v", keys, err)
	}
	if r := g.apiDo(t, key, http.MethodGet, "/v1/webhook-endpoints", ""); r.code != http.StatusOK {
		t.Fatalf("the first key is refused: %d %s", r.code, r.body)
	}
	orgID, err := keystore.OrgIDByName(t.Context(), g.pool, keys[0].Org)
	if err != nil || !strings.HasPrefix(keys[0].Org, "acme-research-") {
		t.Fatalf("organization %q: %v", keys[0].Org, err)
	}
	if r := g.consoleDo(t, session, http.MethodGet, "/orgs/"+orgID+"/keys", nil); r.code != http.StatusOK || !strings.Contains(r.body, "(admin)") {
		t.Fatalf("the person is not the organization's admin: %d\n%.2000s", r.code, r.body)
	}
	if again, _ := g.useSignupLink(t, link); again.code != http.StatusForbidden {
		t.Fatalf("a used link answered %d", again.code)
	}
	// The same address again: the same answer, a mail saying so, nothing made.
	r2 := g.signup(t, signupFields("ada@example.org", "Ada"))
	if r2.code != r.code || r2.body != r.body {
		t.Fatalf("a known address answers differently: %d\n%.2000s", r2.code, r2.body)
	}
	if m2 := awaitMail(t, mp, "ada@example.org", 2); signupLinkRE.MatchString(m2.Text) {
		t.Fatalf("a second link for a signed-up address: %s", m2.Text)
	}
	var orgs int
	if err := g.pool.QueryRow(t.Context(), `SELECT count(*) FROM civicgate.organizations`).Scan(&orgs); err != nil || orgs != 1 {
		t.Fatalf("%d organizations (%v)", orgs, err)
	}
	var actions []string
	if err := g.pool.QueryRow(t.Context(), `SELECT array_agg(action ORDER BY id) FROM civicgate.audit_log`).Scan(&actions); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(actions, " "); got != "signup.request signup.verify key.issue session.sign_in signup.request" {
		t.Errorf("audit: %s", got)
	}
}

// TestSignupApprove: in approve mode a verified request waits in the
// operators' queue (no organization yet); approval mails a link that makes
// it; refusal mails the decision; a non-operator sees no queue.
func TestSignupApprove(t *testing.T) {
	g, mp := startSignupGateway(t, SignupApprove)
	for _, addr := range []string{"grace@example.org", "eve@example.org"} {
		if r := g.signup(t, signupFields(addr, "Someone")); r.code != http.StatusOK {
			t.Fatalf("sign-up %s: %d", addr, r.code)
		}
		done, _ := g.useSignupLink(t, signupLinkRE.FindString(awaitMail(t, mp, addr, 1).Text))
		if done.code != http.StatusOK || !strings.Contains(done.body, `id="signup-waiting"`) || keyValueRE.MatchString(done.body) {
			t.Fatalf("verify in approve mode: %d\n%.2000s", done.code, done.body)
		}
	}
	op, err := consolestore.NewSession(t.Context(), g.pool, consolestore.Identity{Email: "op@civicgate.test", Role: keystore.RoleOperator},
		"link", "192.0.2.1", consolestore.Timeouts{Idle: time.Hour, Lifetime: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	acme := g.newOrg(t, "acme", "free")
	if r := g.consoleDo(t, g.session(t, acme, keystore.RoleAdmin), http.MethodGet, "/signups", nil); r.code != http.StatusNotFound {
		t.Fatalf("an admin sees the queue: %d", r.code)
	}
	queue := pageText(t, g.consoleDo(t, op, http.MethodGet, "/signups", nil))
	if !strings.Contains(queue.body, `id="nav-signups"`) {
		t.Errorf("an operator's pages have no link to the queue")
	}
	list, err := consolestore.ListSignups(t.Context(), g.pool, consolestore.SignupAwaiting, 10)
	if err != nil || len(list) != 2 || !strings.Contains(queue.body, list[0].ID) {
		t.Fatalf("queue %+v %v\n%.2000s", list, err, queue.body)
	}
	ids := map[string]string{}
	for _, s := range list {
		ids[s.Email] = s.ID
	}
	if r := g.consoleDo(t, op, http.MethodPost, "/signups/"+ids["grace@example.org"]+"/approve", form()); r.code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	if r := g.consoleDo(t, op, http.MethodPost, "/signups/"+ids["eve@example.org"]+"/refuse", form()); r.code != http.StatusSeeOther {
		t.Fatalf("refuse: %d %s", r.code, r.body)
	}
	if r := g.consoleDo(t, op, http.MethodPost, "/signups/"+ids["eve@example.org"]+"/approve", form()); r.code != http.StatusConflict {
		t.Fatalf("a decided request decided again: %d", r.code)
	}
	if m := awaitMail(t, mp, "eve@example.org", 2); !strings.Contains(m.Subject, "not approved") || signupLinkRE.MatchString(m.Text) {
		t.Fatalf("refusal mail %+v", m)
	}
	approved := awaitMail(t, mp, "grace@example.org", 2)
	done, _ := g.useSignupLink(t, signupLinkRE.FindString(approved.Text))
	if done.code != http.StatusOK || !keyValueRE.MatchString(done.body) {
		t.Fatalf("approved link: %d\n%.2000s", done.code, done.body)
	}
}

// TestSignupRefusals: header injection and oversized fields are refused at
// the form; a denied domain is refused; the per-address and per-domain
// limits answer 429; a form from another site is refused.
func TestSignupRefusals(t *testing.T) {
	g, _ := startSignupGateway(t, SignupOpen)
	for name, f := range map[string]map[string]string{
		"CRLF in address": signupFields("a@example.org\r\nBcc: victim@example.org", "A"),
		"display name":    signupFields("Eve <a@example.org>", "A"),
		"LF in name":      signupFields("a@example.org", "A\nBcc: victim@example.org"),
		"long name":       signupFields("a@example.org", strings.Repeat("n", maxSignupName+1)),
		"long address":    signupFields(strings.Repeat("a", 250)+"@example.org", "A"),
		"no terms":        {"email": "a@example.org", "name": "A", "organization": "O", "intended_use": "U"},
	} {
		if r := g.signup(t, f); r.code != http.StatusBadRequest {
			t.Errorf("%s: %d", name, r.code)
		}
	}
	if r := g.signup(t, signupFields("a@blocked.test", "A")); r.code != http.StatusForbidden {
		t.Errorf("denied domain: %d", r.code)
	}
	var mails int
	if err := g.pool.QueryRow(t.Context(), `SELECT count(*) FROM civicgate.mail_outbox`).Scan(&mails); err != nil || mails != 0 {
		t.Fatalf("%d mails queued by refused forms (%v)", mails, err)
	}
	// limit_address 2/1h: the third sign-up for one address is refused.
	for i := range 3 {
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if r := g.signup(t, signupFields("flood@example.org", "F")); r.code != want {
			t.Fatalf("sign-up %d: %d, want %d", i+1, r.code, want)
		}
	}
	// limit_domain 5/1h: the two above counted for example.org (the third was
	// refused before its domain was counted); three more addresses fit, the
	// next is refused, another domain is not.
	for i := range 4 {
		want := http.StatusOK
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		if r := g.signup(t, signupFields(fmt.Sprintf("member%d@example.org", i), "M")); r.code != want {
			t.Fatalf("example.org sign-up %d: %d, want %d", i+3, r.code, want)
		}
	}
	if r := g.signup(t, signupFields("member@example.net", "M")); r.code != http.StatusOK {
		t.Fatalf("another domain: %d", r.code)
	}
	req, _ := http.NewRequest(http.MethodPost, g.console+"/signup", strings.NewReader(form("email", "x@example.org", "name", "X",
		"organization", "O", "intended_use", "U", "terms", "accept").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := g.send(t, req); r.code != http.StatusForbidden {
		t.Errorf("a cross-site form: %d", r.code)
	}
}

// TestSignupThroughAMailOutage: with the SMTP server down a sign-up is
// answered at once and its mail waits in the outbox with the failure
// recorded; when the server is back the mail arrives, once.
func TestSignupThroughAMailOutage(t *testing.T) {
	g, mp := startSignupGateway(t, SignupOpen)
	mp.Stop()
	start := time.Now()
	if r := g.signup(t, signupFields("outage@example.org", "O")); r.code != http.StatusOK {
		t.Fatalf("sign-up during the outage: %d", r.code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the sign-up waited %s for the mail server", d)
	}
	testenv.Eventually(t, 30*time.Second, "the failed attempt recorded", func() error {
		var attempts int
		var lastErr string
		if err := g.pool.QueryRow(t.Context(), `SELECT attempts, last_error FROM civicgate.mail_outbox WHERE to_addr = 'outage@example.org'`).
			Scan(&attempts, &lastErr); err != nil {
			return err
		}
		if attempts == 0 || lastErr == "" {
			return fmt.Errorf("attempts %d", attempts)
		}
		return nil
	})
	mp.Start()
	// The first retry is due 5 s after the failure.
	m := awaitMail(t, mp, "outage@example.org", 1)
	if !signupLinkRE.MatchString(m.Text) {
		t.Fatalf("the mail after the outage: %q", m.Text)
	}
	// The server accepts the mail just before the claiming transaction commits.
	testenv.Eventually(t, 30*time.Second, "the mail recorded as sent", func() error {
		var sent int
		if err := g.pool.QueryRow(t.Context(), `SELECT count(*) FROM civicgate.mail_outbox
			WHERE to_addr = 'outage@example.org' AND sent_at IS NOT NULL`).Scan(&sent); err != nil || sent != 1 {
			return fmt.Errorf("sent rows %d (%v)", sent, err)
		}
		return nil
	})
	if ms := mp.MailsTo(t, "outage@example.org"); len(ms) != 1 {
		t.Errorf("%d mails after the outage, want 1", len(ms))
	}
}
