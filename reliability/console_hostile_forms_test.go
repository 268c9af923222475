package reliability

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Other organizations' ids, path tricks, hostile forms and query parameters,
// OIDC without an oidc block, headers, and the API site.

const notFound = "There is nothing here, or it belongs to another organization."

func (c *consoleEnv) crossOrg(t *testing.T) {
	mine, theirs := "/orgs/"+c.acmeID, "/orgs/"+c.rivalID
	revoke := mine + "/keys/" + c.rivalKeyID + "/revoke"
	want(t, "GET revoke of another org's key", c.get(t, revoke, c.admin), http.StatusNotFound, notFound)
	want(t, "POST revoke of another org's key", c.post(t, revoke, c.admin, url.Values{"confirm": {c.rivalKeyID}}), http.StatusNotFound, notFound)
	c.apiWorks(t, "rival's key after acme's revoke attempt", c.rivalKey)

	ep := mine + "/webhooks/" + c.rivalEP
	want(t, "GET another org's endpoint", c.get(t, ep, c.admin), http.StatusNotFound, notFound)
	for _, a := range []string{"/rotate-secret", "/test", "/replay", "/delete"} {
		want(t, "POST another org's endpoint "+a, c.post(t, ep+a, c.admin, url.Values{"confirm": {c.rivalEP}}), http.StatusNotFound, notFound)
	}
	if n := c.count(t, `SELECT count(*) FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, c.rivalEP); n != 0 {
		t.Errorf("acme's actions queued %d deliveries to rival's endpoint", n)
	}
	if c.endpoints(t, c.rivalID) != 1 {
		t.Errorf("acme's delete removed rival's endpoint")
	}

	for _, p := range []string{"/", "/keys", "/usage", "/usage.csv", "/webhooks", "/webhooks/" + c.rivalEP, "/audit",
		"/keys/" + c.rivalKeyID + "/revoke"} {
		want(t, "GET another org's "+p, c.get(t, theirs+p, c.admin), http.StatusNotFound, notFound)
	}
	for _, p := range []string{"/keys/issue", "/keys/rotate", "/keys/" + c.rivalKeyID + "/revoke", "/webhooks",
		"/webhooks/" + c.rivalEP + "/test", "/status", "/tier"} {
		want(t, "POST another org's "+p, c.post(t, theirs+p, c.admin, url.Values{"env": {"live"}, "confirm": {c.rivalKeyID}}), http.StatusNotFound, notFound)
	}
	want(t, "a member's GET /orgs", c.get(t, "/orgs", c.admin), http.StatusNotFound, notFound)
	c.apiWorks(t, "rival's key after acme's attempts", c.rivalKey)
}

// paths are path tricks: never a 500, never another organization's page.
func (c *consoleEnv) paths(t *testing.T) {
	mine := "/orgs/" + c.acmeID
	long := strings.Repeat("a", 4000)
	for _, p := range []string{
		"/orgs/..%2F" + c.rivalID + "/keys",
		"/orgs/%2e%2e%2f" + c.rivalID + "/keys",
		"/orgs/" + c.rivalID + "%2F/keys",
		"/orgs/" + long + "/keys",
		"/orgs/%C3%BC%E2%80%AE/keys",
		"/orgs/%FF%FE/keys",
		"/orgs/%00/keys",
		mine + "/keys/%FF/revoke",
		mine + "/keys/%00/revoke",
		mine + "/keys/" + long + "/revoke",
		mine + "/webhooks/%FF",
		mine + "/webhooks/%00",
		mine + "/webhooks/" + long,
		mine + "/webhooks/%E2%80%AE",
		mine + "/nothing",
		"/nothing",
	} {
		r := c.get(t, p, c.admin)
		if r.code != http.StatusNotFound && r.code != http.StatusBadRequest {
			t.Errorf("GET %.80s: %d, want 404 or 400: %.200s", p, r.code, r.body)
		}
	}
	for _, p := range []string{mine + "/keys/%FF/revoke", mine + "/keys/%00/revoke", mine + "/webhooks/%FF/test", mine + "/webhooks/%00/delete"} {
		r := c.post(t, p, c.admin, url.Values{"confirm": {"x"}})
		if r.code != http.StatusNotFound && r.code != http.StatusBadRequest {
			t.Errorf("POST %.80s: %d, want 404 or 400: %.200s", p, r.code, r.body)
		}
	}
}

func (c *consoleEnv) forms(t *testing.T) {
	org := "/orgs/" + c.acmeID
	before := c.keys(t, "acme")
	big := "env=test&description=" + strings.Repeat("a", 65<<10)
	for _, p := range []string{"/signin/link", org + "/keys/issue", org + "/webhooks", org + "/keys/" + c.acmeKeyID + "/revoke"} {
		want(t, "a 65 KiB form to "+p, c.postRaw(t, p, c.admin, big, "Origin", c.s.ConsoleURL), http.StatusBadRequest, "The form could not be read.")
	}
	for _, body := range []string{"env=%zz", "%=test", "env=test&%"} {
		want(t, "malformed form "+body, c.postRaw(t, org+"/keys/issue", c.admin, body, "Origin", c.s.ConsoleURL), http.StatusBadRequest, "The form could not be read.")
	}
	for _, env := range []string{"", "prod", "LIVE", "live "} {
		want(t, "issue env "+env, c.post(t, org+"/keys/issue", c.admin, url.Values{"env": {env}}), http.StatusBadRequest,
			`id="error"`, "Choose the live or test environment.")
	}
	for _, o := range []string{"-1h", "99999h", "abc", "", "1e9h", "721h"} {
		want(t, "rotate overlap "+o, c.post(t, org+"/keys/rotate", c.admin, url.Values{"env": {"live"}, "overlap": {o}}), http.StatusBadRequest,
			`id="error"`, "Choose an environment and an overlap.")
	}
	for _, confirm := range []string{"", "key_other", strings.ToUpper(c.acmeKeyID), c.acmeKeyID + " "} {
		want(t, "revoke confirm "+confirm, c.post(t, org+"/keys/"+c.acmeKeyID+"/revoke", c.admin, url.Values{"confirm": {confirm}}),
			http.StatusBadRequest, `id="error"`, "Not revoked: type the key id to confirm.")
	}
	if after := c.keys(t, "acme"); !sameKeys(before, after) {
		t.Errorf("refused forms changed acme's keys: %v → %v", before, after)
	}
	c.apiWorks(t, "acme's key after refused forms", c.acmeKey)
}

func (c *consoleEnv) webhookForms(t *testing.T) {
	org := "/orgs/" + c.acmeID
	before := c.endpoints(t, c.acmeID)
	for name, f := range map[string]url.Values{
		"metadata URL":   {"url": {"http://169.254.169.254/"}, "env": {"live"}},
		"file URL":       {"url": {"file:///etc/passwd"}, "env": {"live"}},
		"javascript URL": {"url": {"javascript:alert(1)"}, "env": {"live"}},
		"5000-char URL":  {"url": {"https://example.org/" + strings.Repeat("a", 5000)}, "env": {"live"}},
		"no URL":         {"env": {"live"}},
		"2000-byte desc": {"url": {"https://example.org/d"}, "env": {"live"}, "description": {strings.Repeat("é", 1000)}},
		"unknown family": {"url": {"https://example.org/f"}, "env": {"live"}, "family": {"secrets"}},
		"empty family":   {"url": {"https://example.org/f"}, "env": {"live"}, "family": {""}},
		"unknown env":    {"url": {"https://example.org/e"}, "env": {"staging"}},
	} {
		r := c.post(t, org+"/webhooks", c.admin, f)
		want(t, "create endpoint with "+name, r, http.StatusBadRequest, `id="error"`)
		if !strings.Contains(r.body, "Not created: ") && !strings.Contains(r.body, "Choose the live or test environment.") {
			t.Errorf("create endpoint with %s: no clear message: %.300s", name, r.body)
		}
	}
	for name, body := range map[string]string{
		"a description not UTF-8": "env=live&url=https%3A%2F%2Fexample.org%2Fu&description=%ff%fe",
		"a description with NUL":  "env=live&url=https%3A%2F%2Fexample.org%2Fu&description=a%00b",
		"a URL not UTF-8":         "env=live&url=https%3A%2F%2Fexample.org%2F%ff",
	} {
		want(t, "create endpoint with "+name, c.postRaw(t, org+"/webhooks", c.admin, body, "Origin", c.s.ConsoleURL),
			http.StatusBadRequest, "The form could not be read.")
	}
	if n := c.endpoints(t, c.acmeID); n != before {
		t.Errorf("refused webhook forms created %d endpoints", n-before)
	}
	// A tier without the changes family registers nothing, as the API refuses it (docs/design.md D43).
	key, _ := c.s.IssueKey("frugal", "free", "live")
	c.secret(key)
	frugal := c.signIn(t, c.link(t, "frugal", "admin@frugal.example", "admin"))
	frugalID := c.orgOf(t, frugal)
	want(t, "a tier without changes", c.post(t, "/orgs/"+frugalID+"/webhooks", frugal, url.Values{"url": {"https://example.org/g"},
		"env": {"live"}, "family": {"members"}}), http.StatusForbidden, `id="error"`, "does not include the changes family")
	if n := c.endpoints(t, frugalID); n != 0 {
		t.Errorf("a free organization registered %d endpoints", n)
	}
	// Duplicate families are one family (the webhooks API's rule), not a refusal.
	dup := c.post(t, org+"/webhooks", c.admin, url.Values{"url": {"https://example.org/dup"}, "env": {"live"}, "family": {"bills", "bills"}})
	want(t, "duplicate families", dup, http.StatusOK, "Endpoint created")
	if n := c.count(t, `SELECT count(*) FROM civicgate.webhook_endpoints WHERE org_id = $1 AND url = 'https://example.org/dup' AND families = '{bills}'`, c.acmeID); n != 1 {
		t.Errorf("duplicate families: %d endpoints with families {bills}, want 1", n)
	}

	// A hostile description is shown escaped in the list and on its page.
	xss := c.createEndpoint(t, c.acmeID, c.admin, `<script>alert(1)</script>"onmouseover=alert(2) x='`)
	for _, p := range []string{org + "/webhooks", org + "/webhooks/" + xss} {
		r := c.get(t, p, c.admin)
		want(t, "GET "+p, r, http.StatusOK, "&lt;script&gt;alert(1)&lt;/script&gt;&#34;onmouseover=alert(2)")
		if strings.Contains(r.body, "<script>alert") || strings.Contains(r.body, `"onmouseover=`) {
			t.Errorf("GET %s renders the description unescaped", p)
		}
	}

	ep := org + "/webhooks/" + c.acmeEP
	for _, cur := range []string{"garbage", "-1", "%%%", strings.Repeat("z", 5000)} {
		want(t, "replay from "+cur[:min(len(cur), 10)], c.post(t, ep+"/replay", c.admin, url.Values{"from_cursor": {cur}}), http.StatusBadRequest,
			`id="error"`, "from_cursor is not a cursor of this feed.")
	}
	want(t, "delete confirm mismatch", c.post(t, ep+"/delete", c.admin, url.Values{"confirm": {"we_other"}}), http.StatusBadRequest,
		`id="error"`, "Not deleted: type the endpoint id to confirm.")
	if c.count(t, `SELECT count(*) FROM civicgate.webhook_endpoints WHERE id = $1`, c.acmeEP) != 1 {
		t.Errorf("a refused delete removed the endpoint")
	}
}

func (c *consoleEnv) query(t *testing.T) {
	org := "/orgs/" + c.acmeID
	for _, p := range []string{"/usage?range=1y", "/usage?range=", "/usage.csv?range=1y"} {
		r := c.get(t, org+p, c.admin)
		if p == "/usage?range=" {
			want(t, "GET "+p, r, http.StatusOK) // empty: the default period
			continue
		}
		want(t, "GET "+p, r, http.StatusBadRequest, "Choose 24h, 7d or 90d.")
	}
	for _, k := range []string{c.rivalKeyID, strings.Repeat("k", 10<<10), "key_' OR '1'='1", "ü\u202e"} {
		for _, p := range []string{"/usage?key=", "/usage.csv?key="} {
			want(t, "GET "+p+k[:min(len(k), 12)], c.get(t, org+p+url.QueryEscape(k), c.admin), http.StatusNotFound, notFound)
		}
	}
	for _, a := range []string{"garbage", "2020-01-01T00:00:00Z_at_", "_at_key_x", "9999-99-99T00:00:00Z_at_key_x"} {
		want(t, "keys after="+a, c.get(t, org+"/keys?after="+url.QueryEscape(a), c.admin), http.StatusBadRequest, "Not a page of this list")
	}
	// Not UTF-8, or NUL, in any query value: no page uses it.
	for _, p := range []string{"/keys?after=2020-01-01T00:00:00Z_at_%FF", "/keys?after=2020-01-01T00:00:00Z_at_%00", "/usage?key=%FF",
		"/usage.csv?key=%00", "/audit?before=%00", "/webhooks/" + c.acmeEP + "?before=%C3%28"} {
		want(t, "GET "+p, c.get(t, org+p, c.admin), http.StatusBadRequest, "This address is not valid")
	}
	// Not a page number: the first page.
	for _, b := range []string{"-5", "abc", "99999999999999999999", "1e3"} {
		want(t, "deliveries before="+b, c.get(t, org+"/webhooks/"+c.acmeEP+"?before="+b, c.admin), http.StatusOK, "Webhook endpoint")
	}
	for _, b := range []string{"-5", "abc", "99999999999999999999", "2147483648", "9223372036854775807"} {
		want(t, "audit before="+b, c.get(t, org+"/audit?before="+b, c.admin), http.StatusOK, "Audit log")
	}
}

func (c *consoleEnv) oidcOff(t *testing.T) {
	for _, p := range []string{"/auth/oidc", "/auth/callback?code=x&state=y", "/auth/callback", "/auth/callback?error=access_denied"} {
		want(t, "GET "+p+" without an oidc block", c.get(t, p, ""), http.StatusNotFound, notFound)
	}
	if r := c.get(t, "/signin", ""); r.code != http.StatusOK || strings.Contains(r.body, "/auth/oidc") {
		t.Errorf("the sign-in page offers OIDC without an oidc block: %d", r.code)
	}
}

func (c *consoleEnv) headers(t *testing.T) {
	org := "/orgs/" + c.acmeID
	check := func(what string, r reply, html bool) {
		t.Helper()
		csp := r.h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") ||
			!strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", what, csp)
		}
		for h, v := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
			if got := r.h.Get(h); got != v {
				t.Errorf("%s: %s %q, want %q", what, h, got, v)
			}
		}
		ct := r.h.Get("Content-Type")
		page := strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "text/csv")
		if html && !page {
			t.Errorf("%s: Content-Type %q, want a page", what, ct)
		}
		if page && r.code/100 != 3 && r.h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", what, r.h.Get("Cache-Control"))
		}
	}
	for _, p := range []string{"/signin", "/signin/link", "/signin/link?token=abc", "/auth/oidc", "/orgs/%FF", "/signin?x=%00"} {
		check("GET "+p, c.get(t, p, ""), true)
	}
	check("GET /nothing (to /signin)", c.get(t, "/nothing", ""), false)
	for _, p := range []string{"/", org + "/", org + "/keys", org + "/usage", org + "/webhooks", org + "/webhooks/" + c.acmeEP, org + "/audit",
		org + "/keys/" + c.acmeKeyID + "/revoke", "/orgs/" + c.rivalID + "/keys", org + "/usage?range=1y"} {
		r := c.get(t, p, c.admin)
		check("GET "+p, r, r.code != http.StatusSeeOther)
	}
	check("GET usage.csv", c.get(t, org+"/usage.csv", c.admin), true)
	check("GET /static/console.css", c.get(t, "/static/console.css", ""), false)
	check("GET /static/console.js", c.get(t, "/static/console.js", ""), false)
	check("cross-site POST", c.postRaw(t, org+"/keys/issue", c.admin, "env=test", "Origin", "https://evil.example"), true)
	check("viewer POST", c.post(t, org+"/keys/issue", c.viewer, url.Values{"env": {"test"}}), true)
	check("POST without a session", c.post(t, org+"/keys/issue", "", nil), true)
	check("refused form", c.post(t, org+"/keys/issue", c.admin, url.Values{"env": {"x"}}), true)
	check("refused link", c.post(t, "/signin/link", "", url.Values{"token": {"x"}}), true)
	check("oversized form", c.postRaw(t, "/signin/link", "", "token="+strings.Repeat("a", 65<<10), "Origin", c.s.ConsoleURL), false)
}

// apiSite: the console's cookie is nothing to the API.
func (c *consoleEnv) apiSite(t *testing.T) {
	for _, p := range []string{"/v1/graphql", "/bills?limit=1"} {
		method, body := http.MethodGet, ""
		if p == "/v1/graphql" {
			method, body = http.MethodPost, billsQuery
		}
		var got [2]reply
		for i, cookie := range []string{"", c.admin} {
			req, err := http.NewRequestWithContext(t.Context(), method, c.s.HTTPSURL+p, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if cookie != "" {
				req.AddCookie(&http.Cookie{Name: consoleCookie, Value: cookie})
			}
			got[i] = c.do(t, req, "")
		}
		if got[0].code != http.StatusUnauthorized || got[1].code != got[0].code || got[1].body != got[0].body {
			t.Errorf("%s %s: without a cookie %d %q, with the console's %d %q; want the same 401", method, p,
				got[0].code, got[0].body, got[1].code, got[1].body)
		}
	}
}
