package reliability

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// The organization console's hostile cases (modules/console): sign-in links,
// session cookies, cross-site forms, other organizations' ids, hostile form
// values and query parameters, OIDC endpoints without an oidc block, the
// security headers of every answer, and the API site's indifference to the
// console's cookie. One stack (Caddyfile.local, console on its own site)
// serves every subtest; README.md "The organization console's hostile cases"
// lists them.

const consoleCookie = "__Host-civicgate_session"

// consoleEnv is the running stack and what the subtests share.
type consoleEnv struct {
	s *stack.Stack

	mu      sync.Mutex
	secrets []string // every token, cookie, key and webhook secret seen

	acmeID, rivalID       string // organization ids (console URLs use ids)
	acmeKey, acmeKeyID    string // acme: paid_beta (webhooks need the changes family), live
	rivalKey, rivalKeyID  string // rival: paid_beta, live
	admin, viewer, rAdmin string // session cookie values: acme admin, acme viewer, rival admin
	acmeEP, rivalEP       string // a webhook endpoint of each
}

func (c *consoleEnv) secret(v ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secrets = append(c.secrets, v...)
}

func (c *consoleEnv) known() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.secrets...)
}

// reply is one console answer, body read in full.
type reply struct {
	code int
	body string
	h    http.Header
}

// leak matches what must never reach a client: stack traces, panics, driver
// names and SQL text.
var leak = regexp.MustCompile(`(?i)goroutine \d|panic|runtime error|\bpgx\b|pgconn|sqlstate|\.go:\d|` +
	`\b(select\s.+\sfrom|insert\s+into|update\s+\w+\s+set|delete\s+from)\b|civicgate\.(console_|api_keys|organizations|webhook_)`)

// shownOnce is a key or secret shown once in a console page's read-only field.
var shownOnce = regexp.MustCompile(`readonly value="([^"]+)"`)

// do sends req with the session cookie (raw, unsanitised) and checks the
// answer carries nothing it must not.
func (c *consoleEnv) do(t *testing.T, req *http.Request, cookie string) reply {
	t.Helper()
	if cookie != "" {
		req.Header.Set("Cookie", consoleCookie+"="+cookie)
	}
	resp, err := c.s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %.120s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		t.Fatalf("%s %.120s: body: %v", req.Method, req.URL.Path, err)
	}
	r := reply{code: resp.StatusCode, body: string(b), h: resp.Header}
	c.noSecrets(t, req.Method+" "+req.URL.Path, r.body)
	for _, m := range shownOnce.FindAllStringSubmatch(r.body, -1) {
		c.secret(m[1])
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == consoleCookie && ck.Value != "" {
			c.secret(ck.Value)
		}
	}
	if m := leak.FindString(r.body); m != "" {
		t.Errorf("%s %.120s answered %d with %q: %.400s", req.Method, req.URL.Path, r.code, m, r.body)
	}
	return r
}

// noSecrets fails when body holds a secret seen before it (a shown-once
// value is allowed only on the page that shows it, which do records after).
func (c *consoleEnv) noSecrets(t *testing.T, what, body string) {
	t.Helper()
	for _, s := range c.known() {
		if strings.Contains(body, s) {
			t.Errorf("%.120s: the answer contains a secret (%.6s…)", what, s)
		}
	}
}

func (c *consoleEnv) request(t *testing.T, method, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, c.s.ConsoleURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func (c *consoleEnv) get(t *testing.T, path, cookie string) reply {
	t.Helper()
	return c.do(t, c.request(t, http.MethodGet, path, nil), cookie)
}

// post sends form as a same-origin browser would (Origin = the console).
func (c *consoleEnv) post(t *testing.T, path, cookie string, form url.Values) reply {
	t.Helper()
	return c.postRaw(t, path, cookie, form.Encode(), "Origin", c.s.ConsoleURL)
}

// postRaw sends an urlencoded body with the given header pairs.
func (c *consoleEnv) postRaw(t *testing.T, path, cookie, body string, hdr ...string) reply {
	t.Helper()
	req := c.request(t, http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return c.do(t, req, cookie)
}

func want(t *testing.T, what string, r reply, code int, contains ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: status %d, want %d: %.300s", what, r.code, code, r.body)
		return
	}
	for _, s := range contains {
		if !strings.Contains(r.body, s) {
			t.Errorf("%s: %d answer lacks %q: %.400s", what, code, s, r.body)
		}
	}
}

// wantSignin checks a GET was sent to the sign-in page.
func wantSignin(t *testing.T, what string, r reply) {
	t.Helper()
	if r.code != http.StatusSeeOther || r.h.Get("Location") != "/signin" {
		t.Errorf("%s: %d to %q, want 303 to /signin", what, r.code, r.h.Get("Location"))
	}
}

var linkToken = regexp.MustCompile(`/signin/link\?token=([A-Za-z0-9_-]+)`)

// link makes a sign-in link with the CLI and returns its token.
func (c *consoleEnv) link(t *testing.T, org, email, role string) string {
	t.Helper()
	out := c.s.Run(c.s.Bins.Civicgate, "console", "link", "--org", org, "--email", email, "--role", role)
	m := linkToken.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("console link printed no link")
	}
	c.secret(m[1])
	return m[1]
}

// signIn uses a link and returns the session cookie's value.
func (c *consoleEnv) signIn(t *testing.T, token string) string {
	t.Helper()
	r := c.post(t, "/signin/link", "", url.Values{"token": {token}})
	if v := sessionSet(r); r.code != http.StatusSeeOther || v == "" {
		t.Fatalf("sign-in: %d, cookie %t: %.300s", r.code, v != "", r.body)
	}
	return sessionSet(r)
}

// sessionSet is the session cookie an answer sets ("" if none or cleared).
func sessionSet(r reply) string {
	for _, ck := range (&http.Response{Header: r.h}).Cookies() {
		if ck.Name == consoleCookie && ck.Value != "" && ck.MaxAge >= 0 {
			return ck.Value
		}
	}
	return ""
}

// orgOf is the organization id a member's home redirects to.
func (c *consoleEnv) orgOf(t *testing.T, cookie string) string {
	t.Helper()
	r := c.get(t, "/", cookie)
	id, ok := strings.CutPrefix(r.h.Get("Location"), "/orgs/")
	if r.code != http.StatusSeeOther || !ok {
		t.Fatalf("home: %d to %q", r.code, r.h.Get("Location"))
	}
	return strings.TrimSuffix(id, "/")
}

// sql runs one statement on the stack's database.
func (c *consoleEnv) sql(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tag, err := conn.Exec(ctx, q, args...)
	if err != nil {
		t.Fatalf("sql: %v", err)
	}
	return tag.RowsAffected()
}

// count runs a count query.
func (c *consoleEnv) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("sql: %v", err)
	}
	return n
}

func tokenHash(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// listedKey is a row of `civicgate keys list --json`.
type listedKey struct {
	ID     string `json:"id"`
	Env    string `json:"env"`
	Tier   string `json:"tier"`
	Status string `json:"status"`
}

func (c *consoleEnv) keys(t *testing.T, org string) []listedKey {
	t.Helper()
	var l struct {
		Keys []listedKey `json:"keys"`
	}
	out := c.s.Run(c.s.Bins.Civicgate, "keys", "list", "--org", org, "--json")
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("keys list: %v", err)
	}
	return l.Keys
}

func (c *consoleEnv) endpoints(t *testing.T, orgID string) int {
	t.Helper()
	return c.count(t, `SELECT count(*) FROM civicgate.webhook_endpoints WHERE org_id = $1`, orgID)
}

// apiWorks checks an API key is still accepted.
func (c *consoleEnv) apiWorks(t *testing.T, what, key string) {
	t.Helper()
	r := send(t.Context(), c.s.Client, c.s.HTTPSURL, &call{method: "GET", path: "/bills?limit=1", key: key})
	if r.status != http.StatusOK {
		t.Errorf("%s: the key answers %d (%v), want 200", what, r.status, r.err)
	}
}

// createEndpoint registers a webhook endpoint and returns its id.
var endpointID = regexp.MustCompile(`/webhooks/(we_[0-9A-Za-z]+)"`)

func (c *consoleEnv) createEndpoint(t *testing.T, orgID, cookie, description string) string {
	t.Helper()
	before := endpointID.FindAllStringSubmatch(c.get(t, "/orgs/"+orgID+"/webhooks", cookie).body, -1)
	r := c.post(t, "/orgs/"+orgID+"/webhooks", cookie, url.Values{"url": {"https://example.org/hook"}, "env": {"live"}, "description": {description}})
	want(t, "create endpoint", r, http.StatusOK, "Endpoint created")
	seen := map[string]bool{}
	for _, m := range before {
		seen[m[1]] = true
	}
	for _, m := range endpointID.FindAllStringSubmatch(r.body, -1) {
		if !seen[m[1]] {
			return m[1]
		}
	}
	t.Fatalf("create endpoint: no new endpoint id in the page")
	return ""
}

func TestConsoleHostile(t *testing.T) {
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_WEBHOOKS_DELIVER", "off") // no delivery leaves the machine
	s.Prepare()
	c := &consoleEnv{s: s}
	c.acmeKey, c.acmeKeyID = s.IssueKey("acme", "paid_beta", "live")
	c.rivalKey, c.rivalKeyID = s.IssueKey("rival", "paid_beta", "live")
	k, _ := s.IssueKey("doomed", "free", "live")
	c.secret(c.acmeKey, c.rivalKey, k)
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")

	c.admin = c.signIn(t, c.link(t, "acme", "admin@acme.example", "admin"))
	c.viewer = c.signIn(t, c.link(t, "acme", "viewer@acme.example", "viewer"))
	c.rAdmin = c.signIn(t, c.link(t, "rival", "admin@rival.example", "admin"))
	c.acmeID, c.rivalID = c.orgOf(t, c.admin), c.orgOf(t, c.rAdmin)
	if c.acmeID == c.rivalID {
		t.Fatalf("acme and rival share id %q", c.acmeID)
	}
	c.acmeEP = c.createEndpoint(t, c.acmeID, c.admin, "acme's")
	c.rivalEP = c.createEndpoint(t, c.rivalID, c.rAdmin, "rival's")

	t.Run("links", c.links)
	t.Run("sessions", c.sessions)
	t.Run("roles", c.roles)
	t.Run("csrf", c.csrf)
	t.Run("crossorg", c.crossOrg)
	t.Run("paths", c.paths)
	t.Run("forms", c.forms)
	t.Run("webhookforms", c.webhookForms)
	t.Run("query", c.query)
	t.Run("oidc", c.oidcOff)
	t.Run("headers", c.headers)
	t.Run("apisite", c.apiSite)

	s.CheckLogs(t, c.known()...)
}
