package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
)

// xssDescription is a webhook endpoint description that runs script if the
// console ever renders it as markup.
const xssDescription = `<script>alert(1)</script><img src=x onerror=alert(2)>`

var (
	newKeyIDPattern = regexp.MustCompile(`key_[0-9A-Za-z]+`)
	barTitlePattern = regexp.MustCompile(`<title>[^<]* — ([0-9\x{202f}]+) admitted,`)
)

// TestConsoleAdmin is an admin's story in a real browser against the real
// gateway: sign in with a CLI link, issue a key and call the API with it,
// rotate with and without overlap, revoke, see the usage of those calls in
// the chart, the totals and the CSV, create a webhook endpoint with a hostile
// description and send it a test event, and find every change in the audit
// log (page and CLI). Nothing secret reaches a log.
func TestConsoleAdmin(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on")
	s.Setenv("CIVICGATE_WEBHOOKS_POLL", "100ms")
	s.Prepare()
	k0, _ := s.IssueKey("acme", "enterprise", "live")
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	const email = "ada@acme.example"
	secrets := []string{k0}
	admitted := 0 // API requests the gateway admitted for acme's keys

	ctx := testbrowser.New(t)
	dialogs := watchDialogs(ctx)

	// 1. Sign in with a link: a button first, then the overview.
	link, tok := consoleLink(t, s, "acme", email, "admin")
	secrets = append(secrets, tok)
	testbrowser.Navigate(t, ctx, link)
	testbrowser.WaitVisible(t, ctx, "#use-link")
	testbrowser.Screenshot(t, ctx, "link")
	testbrowser.Click(t, ctx, "#use-link")
	if got := testbrowser.Text(t, ctx, "#org-name"); got != "acme" {
		t.Fatalf("overview names organization %q, want acme", got)
	}
	if got := testbrowser.Text(t, ctx, "#who"); got != email+" (admin)" {
		t.Fatalf("#who is %q, want %q", got, email+" (admin)")
	}
	orgPath := strings.TrimPrefix(testbrowser.Location(t, ctx), s.ConsoleURL)
	if !strings.HasPrefix(orgPath, "/orgs/") || !strings.HasSuffix(orgPath, "/") {
		t.Fatalf("signed in at %s, want the overview /orgs/{org}/", orgPath)
	}
	testbrowser.Screenshot(t, ctx, "overview")
	var session *network.Cookie
	for _, c := range testbrowser.Cookies(t, ctx) {
		if c.Name == "__Host-civicgate_session" {
			session = c
		}
	}
	if session == nil || !session.HTTPOnly || !session.Secure || session.SameSite != network.CookieSameSiteLax ||
		session.Path != "/" || session.Domain != "localhost" {
		t.Fatalf("session cookie %+v, want HttpOnly, Secure, SameSite=Lax, Path=/, host-only", session)
	}
	secrets = append(secrets, session.Value)
	secrets = append(secrets, strings.Fields(checkSetCookie(t, s))...)

	// 2. Issue a key (the organization's tier comes from its first key).
	testbrowser.Navigate(t, ctx, s.ConsoleURL+orgPath+"keys")
	testbrowser.SetValue(t, ctx, "#issue-env", "live")
	testbrowser.Click(t, ctx, "#issue")
	k1, k1ID := shownKey(t, ctx)
	secrets = append(secrets, k1)
	testbrowser.Screenshot(t, ctx, "keys-new-key")
	if code, body := graphqlCall(t, s, k1, billsDoc); code != http.StatusOK {
		t.Fatalf("the issued key answered %d %s", code, body)
	}
	admitted++
	testbrowser.Navigate(t, ctx, s.ConsoleURL+orgPath+"keys")
	if html := outerHTML(t, ctx); strings.Contains(html, k1) || strings.Contains(html, k1[len(k1)-20:]) {
		t.Fatal("the keys page shows the issued key again after a reload")
	}
	if !strings.Contains(testbrowser.Text(t, ctx, "#keys"), k1ID) {
		t.Fatalf("the keys table does not list %s", k1ID)
	}

	// 3. Rotate with no overlap: the oldest active key (k0) is out at once.
	testbrowser.SetValue(t, ctx, "#rotate-env", "live")
	testbrowser.SetValue(t, ctx, "#overlap", "0s")
	testbrowser.Click(t, ctx, "#rotate")
	k2, k2ID := shownKey(t, ctx)
	rotated := time.Now()
	secrets = append(secrets, k2)
	admitted += awaitRefused(t, s, k0, `{"error":"API key rotated out"}`, rotated)

	// 4. Revoke k1 after typing its id.
	testbrowser.Navigate(t, ctx, s.ConsoleURL+orgPath+"keys/"+k1ID+"/revoke")
	testbrowser.Screenshot(t, ctx, "revoke-confirm")
	testbrowser.SendKeys(t, ctx, "#confirm", k1ID)
	testbrowser.Click(t, ctx, "#revoke")
	if got := testbrowser.Text(t, ctx, "#notice"); !strings.Contains(got, k1ID+" revoked") {
		t.Fatalf("revoke notice %q", got)
	}
	admitted += awaitRefused(t, s, k1, `{"error":"API key revoked"}`, time.Now())

	// 3b. Rotate k2 with a 1 h overlap: it keeps working, named as rotating.
	testbrowser.SetValue(t, ctx, "#overlap", "1h")
	testbrowser.Click(t, ctx, "#rotate")
	k3, _ := shownKey(t, ctx)
	secrets = append(secrets, k3)
	if k3 == k2 {
		t.Fatal("the rotation with overlap showed the previous rotation's key")
	}
	if got := testbrowser.Text(t, ctx, "#rotating"); !strings.Contains(got, k2ID) {
		t.Fatalf("#rotating is %q, want it to name %s", got, k2ID)
	}
	if got := testbrowser.Text(t, ctx, "#key-"+k2ID); !strings.Contains(got, "rotating") {
		t.Fatalf("row of %s is %q, want rotating", k2ID, got)
	}
	for _, k := range []string{k2, k3} {
		if code, body := graphqlCall(t, s, k, billsDoc); code != http.StatusOK {
			t.Fatalf("a key of the overlap answered %d %s", code, body)
		}
		admitted++
	}

	// 7. Usage: 7 queries and 1 the guard refuses, all admitted.
	for range 7 {
		if code, body := graphqlCall(t, s, k3, billsDoc); code != http.StatusOK {
			t.Fatalf("query answered %d %s", code, body)
		}
	}
	if code, body := graphqlCall(t, s, k3, invalidDoc); code == http.StatusOK && !strings.Contains(body, `"errors"`) ||
		code == http.StatusUnauthorized || code == http.StatusTooManyRequests {
		t.Fatalf("invalid document answered %d %s, want a GraphQL error", code, body)
	}
	admitted += 8
	stack.WaitFor(t, 20*time.Second, "usage flushed", func() error {
		if _, total := usageOf(t, s, "acme"); total.Admitted != int64(admitted) {
			return fmt.Errorf("keys usage says %d admitted, want %d", total.Admitted, admitted)
		}
		return nil
	})
	checkUsagePage(t, s, ctx, orgPath, session.Value, admitted)

	// 6. Webhooks: a hostile description stays text; a test event arrives signed.
	hook := startReceiver(t)
	testbrowser.Navigate(t, ctx, s.ConsoleURL+orgPath+"webhooks")
	testbrowser.SetValue(t, ctx, "#url", hook.URL+"/hook")
	testbrowser.SetValue(t, ctx, "#description", xssDescription)
	testbrowser.SetValue(t, ctx, "#ep-env", "live")
	testbrowser.Click(t, ctx, "#create")
	secret := inputValue(t, ctx, "#new-secret")
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("#new-secret is %q, want a whsec_ secret", secret)
	}
	secrets = append(secrets, secret)
	testbrowser.Screenshot(t, ctx, "webhooks")
	if html := outerHTML(t, ctx); !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatal("the webhooks page does not show the description escaped")
	}
	testbrowser.Click(t, ctx, "#endpoints a")
	if got := testbrowser.Text(t, ctx, "#endpoint-description"); got != xssDescription {
		t.Fatalf("#endpoint-description is %q, want the raw text %q", got, xssDescription)
	}
	endpoint := testbrowser.Location(t, ctx)
	if html := outerHTML(t, ctx); strings.Contains(html, secret) {
		t.Fatal("the endpoint page shows the signing secret again")
	}
	testbrowser.Click(t, ctx, "#send-test")
	notice := testbrowser.Text(t, ctx, "#notice")
	event := regexp.MustCompile(`evt_[0-9A-Za-z]+|[0-9a-f-]{36}`).FindString(notice)
	got := hook.await(t, 1)[0]
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(got.body, got.h); err != nil {
		t.Fatalf("test event signature: %v", err)
	}
	if !strings.Contains(string(got.body), `"ping"`) || (event != "" && !strings.Contains(notice, got.h.Get("webhook-id"))) {
		t.Fatalf("received %s (webhook-id %s) after %q", got.body, got.h.Get("webhook-id"), notice)
	}
	stack.WaitFor(t, 20*time.Second, "the ping listed as delivered", func() error {
		testbrowser.Navigate(t, ctx, endpoint)
		rows := testbrowser.Text(t, ctx, "#deliveries tbody")
		if !regexp.MustCompile(`test\s+delivered\s+1\s+2\d\d`).MatchString(rows) {
			return fmt.Errorf("deliveries: %q", rows)
		}
		return nil
	})
	testbrowser.Screenshot(t, ctx, "endpoint-deliveries")
	if d := dialogs(); len(d) > 0 {
		t.Fatalf("the console opened dialogs: %v", d)
	}
	if e := scriptErrors(ctx); len(e) > 0 {
		t.Fatalf("script ran or was blocked on a console page: %v", e)
	}

	// 11. The audit log, on the page and from the CLI.
	testbrowser.Navigate(t, ctx, s.ConsoleURL+orgPath+"audit")
	testbrowser.Screenshot(t, ctx, "audit")
	page := testbrowser.Text(t, ctx, "#audit")
	actions := []string{"key.issue", "key.rotate", "key.revoke", "webhook.create"}
	for _, a := range actions {
		if !regexp.MustCompile(regexp.QuoteMeta(email) + `\s+\(admin\)\s+` + regexp.QuoteMeta(a) + `[^\n]*127\.0\.0\.1`).MatchString(page) {
			t.Errorf("the audit page has no %s by %s from 127.0.0.1:\n%s", a, email, page)
		}
	}
	checkAuditCLI(t, s, email, actions)

	// 10. The keys and usage pages on a phone.
	phone := testbrowser.NewPhone(t)
	ptok, _ := signIn(t, s, phone, "acme", email, "admin")
	secrets = append(secrets, ptok, sessionCookie(t, phone))
	for _, p := range []string{"keys", "usage"} {
		testbrowser.Navigate(t, phone, s.ConsoleURL+orgPath+p)
		testbrowser.Screenshot(t, phone, "phone-"+p)
		noHorizontalOverflow(t, phone, p)
	}
	latestHoursInView(t, phone)

	s.CheckLogs(t, secrets...)
}

// shownKey waits for the key shown once and returns it with its id.
func shownKey(t *testing.T, ctx context.Context) (key, id string) {
	t.Helper()
	testbrowser.WaitVisible(t, ctx, "#new-key")
	key = inputValue(t, ctx, "#new-key")
	id = newKeyIDPattern.FindString(testbrowser.Text(t, ctx, "#new-key-label"))
	if !strings.HasPrefix(key, "cg_live_") || id == "" {
		t.Fatalf("shown key %q (id %q), want a live key and its id", key[:min(len(key), 8)], id)
	}
	return key, id
}

// checkUsagePage checks the totals, the chart's bars and the CSV against
// the number of admitted requests.
func checkUsagePage(t *testing.T, s *stack.Stack, ctx context.Context, orgPath, cookie string, admitted int) {
	t.Helper()
	testbrowser.Navigate(t, ctx, s.ConsoleURL+orgPath+"usage")
	if got := testbrowser.Text(t, ctx, "#total-admitted"); got != strconv.Itoa(admitted) {
		t.Fatalf("#total-admitted is %q, want %d", got, admitted)
	}
	testbrowser.WaitVisible(t, ctx, "#chart svg")
	chart := outerHTMLOf(t, ctx, "#chart")
	sum := 0
	for _, m := range barTitlePattern.FindAllStringSubmatch(chart, -1) {
		n, _ := strconv.Atoi(strings.ReplaceAll(m[1], "\u202f", ""))
		sum += n
	}
	if sum != admitted {
		t.Fatalf("the chart's bar titles add up to %d admitted, want %d:\n%.2000s", sum, admitted, chart)
	}
	testbrowser.Screenshot(t, ctx, "usage")
	href := attrOf(t, ctx, "#csv", "href")
	code, body := consoleDo(t, s, cookie, http.MethodGet, href, nil)
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if code != http.StatusOK || err != nil || len(rows) < 2 || strings.Join(rows[0], ",") != "start,key_id,admitted,refused,client_errors,server_errors,cost" {
		t.Fatalf("CSV answered %d (%v):\n%.500s", code, err, body)
	}
	sum = 0
	for _, r := range rows[1:] {
		n, err := strconv.Atoi(r[2])
		if err != nil {
			t.Fatalf("CSV row %v: %v", r, err)
		}
		sum += n
	}
	if sum != admitted {
		t.Fatalf("the CSV's admitted column adds up to %d, want %d", sum, admitted)
	}
}

// TestConsoleSecurity: a viewer cannot change keys, even with a hand-made
// POST; a form posted from another site is refused; another organization's
// keys and endpoints do not exist under any URL of the member's; used and
// expired sign-in links are refused; "sign out everywhere" ends the
// member's session in another browser too.
func TestConsoleSecurity(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on")
	s.Setenv("CIVICGATE_WEBHOOKS_DELIVER", "off")
	s.Prepare()
	key, _ := s.IssueKey("acme", "enterprise", "live")
	other, otherKeyID := s.IssueKey("globex", "enterprise", "live")
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	const email = "ada@acme.example"
	secrets := []string{key, other}
	hook := startReceiver(t)
	resp, body := do(t, s, http.MethodPost, "/v1/webhook-endpoints", other, "application/json",
		strings.NewReader(`{"url":"`+hook.URL+`/hook","families":["members"]}`))
	var ep struct{ ID, Secret string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &ep) != nil || ep.ID == "" {
		t.Fatalf("globex's endpoint: %d %s", resp.StatusCode, body)
	}
	secrets = append(secrets, ep.Secret)
	otherOrg := orgIDByName(t, s, "globex")

	admin := testbrowser.New(t)
	tok, org := signIn(t, s, admin, "acme", email, "admin")
	cookie := sessionCookie(t, admin)
	secrets = append(secrets, tok, cookie)

	// Another organization's key and endpoint, under either organization's URLs.
	for _, p := range []string{
		"/orgs/" + org + "/keys/" + otherKeyID + "/revoke",
		"/orgs/" + org + "/webhooks/" + ep.ID,
		"/orgs/" + org + "/usage?key=" + otherKeyID,
		"/orgs/" + otherOrg + "/",
		"/orgs/" + otherOrg + "/keys",
		"/orgs/" + otherOrg + "/keys/" + otherKeyID + "/revoke",
		"/orgs/" + otherOrg + "/webhooks/" + ep.ID,
	} {
		if code, page := consoleDo(t, s, cookie, http.MethodGet, p, nil); code != http.StatusNotFound || !strings.Contains(page, "Not found") {
			t.Errorf("GET %s answered %d, want 404 Not found", p, code)
		}
	}
	for _, p := range []string{"/orgs/" + org + "/keys/" + otherKeyID + "/revoke", "/orgs/" + org + "/webhooks/" + ep.ID + "/test",
		"/orgs/" + otherOrg + "/keys/issue"} {
		form := url.Values{"confirm": {otherKeyID}, "env": {"live"}}
		if code, _ := consoleDo(t, s, cookie, http.MethodPost, p, form); code != http.StatusNotFound {
			t.Errorf("POST %s answered %d, want 404", p, code)
		}
	}
	if code, body := graphqlCall(t, s, other, billsDoc); code != http.StatusOK {
		t.Fatalf("globex's key answered %d %s after acme's attempts", code, body)
	}

	// A form posted from another site (127.0.0.1 is not localhost's site).
	evil := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form method=post action="%s/orgs/%s/keys/issue"><input name=env value=live></form>`+
			`<script>document.forms[0].submit()</script>`, s.ConsoleURL, org)
	}))
	t.Cleanup(evil.Close)
	testbrowser.Navigate(t, admin, evil.URL)
	testbrowser.WaitVisible(t, admin, "#status-text")
	if got := testbrowser.Text(t, admin, "h1"); got != "Request refused" {
		t.Fatalf("the cross-site form led to %q, want the console's Request refused page", got)
	}
	testbrowser.Screenshot(t, admin, "refused-cross-site")
	if ids := keyIDs(t, s, "acme"); len(ids) != 1 {
		t.Fatalf("acme has keys %v after the cross-site form, want only its first", ids)
	}

	// A viewer sees keys but no forms, and a same-origin POST is refused.
	second := testbrowser.New(t)
	vtok, _ := signIn(t, s, second, "acme", "vic@acme.example", "viewer")
	vcookie := sessionCookie(t, second)
	secrets = append(secrets, vtok, vcookie)
	testbrowser.Navigate(t, second, s.ConsoleURL+"/orgs/"+org+"/keys")
	testbrowser.WaitVisible(t, second, "#keys")
	if html := outerHTML(t, second); strings.Contains(html, `id="issue"`) || strings.Contains(html, `id="rotate"`) || strings.Contains(html, "/revoke") {
		t.Fatal("the viewer's keys page offers issue, rotate or revoke")
	}
	if code, page := consoleDo(t, s, vcookie, http.MethodPost, "/orgs/"+org+"/keys/issue", url.Values{"env": {"live"}}); code != http.StatusForbidden || !strings.Contains(page, "Not allowed") {
		t.Fatalf("the viewer's POST to issue answered %d, want 403 Not allowed", code)
	}
	if ids := keyIDs(t, s, "acme"); len(ids) != 1 {
		t.Fatalf("acme has keys %v after the viewer's POST, want only its first", ids)
	}

	// A used link, then an expired one.
	testbrowser.Navigate(t, second, s.ConsoleURL+"/signin/link?token="+url.QueryEscape(tok))
	testbrowser.Click(t, second, "#use-link")
	testbrowser.WaitVisible(t, second, "#status-text")
	if got := testbrowser.Text(t, second, "h1"); got != "This sign-in link was already used or has expired" {
		t.Fatalf("a used link led to %q", got)
	}
	testbrowser.Screenshot(t, second, "refused-used-link")
	late, lateTok := consoleLink(t, s, "acme", "late@acme.example", "admin")
	secrets = append(secrets, lateTok)
	expireLinks(t, s)
	testbrowser.Navigate(t, second, late)
	testbrowser.Click(t, second, "#use-link")
	testbrowser.WaitVisible(t, second, "#status-text")
	if got := testbrowser.Text(t, second, "h1"); got != "This sign-in link was already used or has expired" {
		t.Fatalf("an expired link led to %q", got)
	}
	testbrowser.Navigate(t, second, s.ConsoleURL+"/signin")
	testbrowser.Screenshot(t, second, "signin")
	if got := testbrowser.Text(t, second, "#main p"); !strings.HasPrefix(got, "Open the one-time sign-in link") {
		t.Errorf("the sign-in page without OIDC says %q", got)
	}

	// Sign out everywhere: the member's session in the second browser ends too.
	tok2, _ := signIn(t, s, second, "acme", email, "admin")
	cookie2 := sessionCookie(t, second)
	secrets = append(secrets, tok2, cookie2)
	testbrowser.Navigate(t, admin, s.ConsoleURL+"/orgs/"+org+"/")
	testbrowser.Click(t, admin, `form[action="/signout/everywhere"] button`)
	runBrowser(t, admin, "the signed-out page", chromedp.WaitNotPresent("#who", chromedp.ByQuery))
	testbrowser.Navigate(t, second, s.ConsoleURL+"/orgs/"+org+"/")
	if loc := testbrowser.Location(t, second); loc != s.ConsoleURL+"/signin" {
		t.Fatalf("after signing out everywhere the second browser is at %s, want /signin", loc)
	}
	for _, c := range []string{cookie, cookie2} {
		if code, _ := consoleDo(t, s, c, http.MethodGet, "/orgs/"+org+"/", nil); code != http.StatusSeeOther {
			t.Errorf("an ended session answered %d, want 303 to /signin", code)
		}
	}
	if code, _ := consoleDo(t, s, vcookie, http.MethodGet, "/orgs/"+org+"/", nil); code != http.StatusOK {
		t.Errorf("the viewer's session (another member) answered %d after ada signed out everywhere, want 200", code)
	}

	s.CheckLogs(t, secrets...)
}
