package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
)

// The organization console's end-to-end tests drive a real headless Chromium
// against the console site of Caddyfile.local (modules/console), run by the
// real civicgate binary next to the API it manages.

var linkTokenPattern = regexp.MustCompile(`token=([^&\s]+)`)

// consoleLink runs `civicgate console link` and returns the sign-in URL (the
// first line) and its token.
func consoleLink(t *testing.T, s *stack.Stack, org, email, role string) (link, token string) {
	t.Helper()
	args := []string{"console", "link", "--email", email, "--role", role}
	if org != "" {
		args = append(args, "--org", org)
	}
	out := s.Run(s.Bins.Civicgate, args...)
	link, _, _ = strings.Cut(out, "\n")
	if !strings.HasPrefix(link, s.ConsoleURL+"/signin/link?token=") {
		t.Fatalf("console link printed %q, want a link to %s/signin/link", link, s.ConsoleURL)
	}
	m := linkTokenPattern.FindStringSubmatch(link)
	tok, err := url.QueryUnescape(m[1])
	if err != nil || tok == "" {
		t.Fatalf("console link: no token in %q", link)
	}
	return link, tok
}

// signIn opens a fresh sign-in link in the browser, clicks its button and
// waits for the overview; it returns the link's token and the organization
// id (from the overview's URL).
func signIn(t *testing.T, s *stack.Stack, ctx context.Context, org, email, role string) (token, orgID string) {
	t.Helper()
	link, tok := consoleLink(t, s, org, email, role)
	testbrowser.Navigate(t, ctx, link)
	testbrowser.Click(t, ctx, "#use-link")
	testbrowser.WaitVisible(t, ctx, "#who")
	if got := testbrowser.Text(t, ctx, "#who"); !strings.Contains(got, email) {
		t.Fatalf("#who is %q after signing in as %s", got, email)
	}
	loc := testbrowser.Location(t, ctx)
	rest, ok := strings.CutPrefix(loc, s.ConsoleURL+"/orgs/")
	if ok {
		orgID, _, _ = strings.Cut(rest, "/")
	}
	return tok, orgID
}

// sessionCookie is the browser's console session cookie value.
func sessionCookie(t *testing.T, ctx context.Context) string {
	t.Helper()
	for _, c := range testbrowser.Cookies(t, ctx) {
		if c.Name == "__Host-civicgate_session" {
			return c.Value
		}
	}
	t.Fatal("the browser holds no __Host-civicgate_session cookie")
	return ""
}

// consoleDo sends a request to the console with a session cookie and the
// console's own Origin (a same-origin request, as the browser's forms send),
// without following redirects.
func consoleDo(t *testing.T, s *stack.Stack, cookie, method, path string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.ConsoleURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Cookie", "__Host-civicgate_session="+cookie)
	req.Header.Set("Origin", s.ConsoleURL)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// graphqlCall posts a GraphQL document to the API with a key.
func graphqlCall(t *testing.T, s *stack.Stack, key, doc string) (int, string) {
	t.Helper()
	resp, body := do(t, s, http.MethodPost, "/v1/graphql", key, "application/json", strings.NewReader(doc))
	return resp.StatusCode, body
}

// awaitRefused polls the API with key until it answers 401 with exactly
// want, and returns how many requests got through before (admitted). The
// promise — refused within about 2 s of the change (docs/api.md; the shipped
// cache TTL is 1 s) — is checked on when each request was sent, which a
// loaded machine cannot move to the wrong side: a request sent 2 s or more
// after since (the moment the change was confirmed on the page) and still
// admitted fails the test; the wait itself is bounded generously.
func awaitRefused(t *testing.T, s *stack.Stack, key, want string, since time.Time) int {
	t.Helper()
	const promise = 2 * time.Second
	admitted := 0
	stack.WaitFor(t, 30*time.Second, "the key refused with "+want, func() error {
		sent := time.Now()
		code, body := graphqlCall(t, s, key, billsDoc)
		switch {
		case code == http.StatusUnauthorized && strings.TrimSpace(body) == want:
			return nil
		case code == http.StatusOK && sent.Sub(since) >= promise:
			t.Fatalf("a request sent %v after the change was still admitted, want refused within %v",
				sent.Sub(since).Round(time.Millisecond), promise)
		case code == http.StatusOK:
			admitted++
			return fmt.Errorf("still admitted %v after the change", time.Since(since).Round(time.Millisecond))
		}
		t.Fatalf("the key answered %d %s, want 200 until it is refused with 401 %s", code, body, want)
		return nil
	})
	return admitted
}

// keyIDs lists the organization's key ids with `keys list`.
func keyIDs(t *testing.T, s *stack.Stack, org string) []string {
	t.Helper()
	out := s.Run(s.Bins.Civicgate, "keys", "list", "--org", org)
	seen := map[string]bool{}
	var ids []string
	for _, id := range regexp.MustCompile(`key_[0-9A-Za-z]+`).FindAllString(out, -1) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// outerHTML is the current document's markup.
func outerHTML(t *testing.T, ctx context.Context) string {
	t.Helper()
	var html string
	runBrowser(t, ctx, "outer HTML", chromedp.OuterHTML("html", &html, chromedp.ByQuery))
	return html
}

// attr reads an attribute (or, for "value", an input's current value) of
// the first element matching selector.
func inputValue(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	var v string
	runBrowser(t, ctx, "value of "+selector, chromedp.Value(selector, &v, chromedp.ByQuery, chromedp.NodeReady))
	return v
}

func runBrowser(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, testbrowser.Timeout)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// watchDialogs records every JavaScript dialog (alert, confirm, prompt) the
// tab opens, dismissing it so the page goes on.
func watchDialogs(ctx context.Context) func() []string {
	ch := make(chan string, 16)
	chromedp.ListenTarget(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			select {
			case ch <- string(d.Type) + ": " + d.Message:
			default:
			}
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(false)) }()
		}
	})
	return func() []string {
		var out []string
		for {
			select {
			case d := <-ch:
				out = append(out, d)
			default:
				return out
			}
		}
	}
}

// scriptErrors are console entries that show a script ran or was blocked:
// uncaught exceptions and Content-Security-Policy violations.
func scriptErrors(ctx context.Context) []testbrowser.Entry {
	var out []testbrowser.Entry
	for _, e := range testbrowser.Console(ctx) {
		if e.Source == "exception" || e.Source == "security" || strings.Contains(e.Text, "Content Security Policy") {
			out = append(out, e)
		}
	}
	return out
}

// expireLinks makes every unused sign-in link of the stack expired.
func expireLinks(t *testing.T, s *stack.Stack) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, `UPDATE civicgate.console_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`)
	if err != nil || tag.RowsAffected() == 0 {
		t.Fatalf("expire links: %v (%d rows)", err, tag.RowsAffected())
	}
}

// orgID looks an organization's id up by name.
func orgIDByName(t *testing.T, s *stack.Stack, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id string
	if err := conn.QueryRow(ctx, `SELECT id FROM civicgate.organizations WHERE name = $1`, name).Scan(&id); err != nil {
		t.Fatalf("organization %s: %v", name, err)
	}
	return id
}

// outerHTMLOf is the markup of the first element matching selector.
func outerHTMLOf(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	var html string
	runBrowser(t, ctx, "outer HTML of "+selector, chromedp.OuterHTML(selector, &html, chromedp.ByQuery))
	return html
}

// attrOf reads an attribute of the first element matching selector.
func attrOf(t *testing.T, ctx context.Context, selector, name string) string {
	t.Helper()
	var v string
	var ok bool
	runBrowser(t, ctx, name+" of "+selector, chromedp.AttributeValue(selector, name, &v, &ok, chromedp.ByQuery))
	if !ok {
		t.Fatalf("%s has no %s attribute", selector, name)
	}
	return v
}

// noHorizontalOverflow fails when the page is wider than the viewport (a
// phone would scroll sideways).
func noHorizontalOverflow(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	var widths []int
	runBrowser(t, ctx, "page width", chromedp.Evaluate(`[document.documentElement.scrollWidth, window.innerWidth]`, &widths))
	if len(widths) != 2 || widths[0] > widths[1] {
		t.Errorf("the %s page is %v px wide on a %d px phone screen: it scrolls sideways", page, widths, testbrowser.PhoneWidth)
	}
}

// latestHoursInView checks that the usage chart, wider than a phone's screen
// and scrolling inside its box, shows its right end (the latest hours, where
// the requests just made are) without the user scrolling.
func latestHoursInView(t *testing.T, ctx context.Context) {
	t.Helper()
	var edges []float64
	runBrowser(t, ctx, "chart edges", chromedp.Evaluate(
		`(() => { const c = document.querySelector('.chart'), b = c.getBoundingClientRect(), s = c.querySelector('svg').getBoundingClientRect(); return [b.right, s.right, b.width, s.width]; })()`, &edges))
	if len(edges) != 4 || edges[3] <= edges[2] || edges[1] > edges[0]+1 {
		t.Errorf("usage chart on a phone: box right %v, chart right %v (widths %v, %v): want the chart wider than its box and its right end in view", edges[0], edges[1], edges[2], edges[3])
	}
}

// checkSetCookie signs in with a fresh link outside the browser and checks
// the raw Set-Cookie header: no Domain attribute. It returns the link token
// and the session token, space-separated.
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
	for _, c := range resp.Cookies() {
		tok += " " + c.Value // the session token, a secret too
	}
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
