package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/civicgate/civicgate/internal/stack"
	"github.com/civicgate/civicgate/internal/testbrowser"
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
	secrets = append(secrets, checkSetCookie(t, s))

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

// checkSetCookie signs in with a fresh link outside the browser and checks
// the raw Set-Cookie header: no Domain attribute. It returns the link token.
func checkSetCookie(t *testing.T, s *stack.Stack) string {
	t.Helper()
	_, tok := consoleLink(t, s, "acme", "cookie@acme.example", "viewer")
	req, _ := http.NewRequest(http.MethodPost, s.ConsoleURL+"/signin/link", strings.NewReader("token="+tok))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.ConsoleURL)
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sc := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(sc, "__Host-civicgate_session=") ||
		strings.Contains(strings.ToLower(sc), "domain=") {
		t.Fatalf("sign-in answered %d with Set-Cookie %q, want a host-only session cookie", resp.StatusCode, strings.SplitN(sc, ";", 2)[1:])
	}
	for _, attr := range []string{"Path=/", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(sc, "; "+attr) {
			t.Errorf("Set-Cookie lacks %s", attr)
		}
	}
	return tok
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

// checkAuditCLI checks `civicgate audit --org acme --json` lists each action
// by the member with a client address.
func checkAuditCLI(t *testing.T, s *stack.Stack, email string, actions []string) {
	t.Helper()
	out := s.Run(s.Bins.Civicgate, "audit", "--org", "acme", "--json")
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Actor, Action string
			ClientAddr    string `json:"client_addr"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit --json line %q: %v", line, err)
		}
		if e.Actor == email && e.ClientAddr != "" {
			seen[e.Action] = true
		}
	}
	for _, a := range actions {
		if !seen[a] {
			t.Errorf("civicgate audit --json has no %s by %s with a client address:\n%s", a, email, out)
		}
	}
}

// receiver is an httptest webhook receiver on 127.0.0.1.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []received
}

type received struct {
	h    http.Header
	body []byte
}

func startReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), b})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) await(t *testing.T, n int) []received {
	t.Helper()
	var out []received
	stack.WaitFor(t, 20*time.Second, "webhook deliveries", func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		out = append([]received(nil), r.got...)
		if len(out) < n {
			return fmt.Errorf("received %d of %d", len(out), n)
		}
		return nil
	})
	return out
}
