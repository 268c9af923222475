package reliability

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Sign-in links, sessions, roles and cross-site forms of the console.

const linkRefused = "This sign-in link was already used or has expired"

func (c *consoleEnv) links(t *testing.T) {
	long := strings.Repeat("A", 10<<10)
	for _, q := range []string{"", "?token=", "?token=" + long, "?other=1"} {
		want(t, "GET /signin/link"+q[:min(len(q), 20)], c.get(t, "/signin/link"+q, ""), http.StatusBadRequest, "This sign-in link is not valid")
	}
	// A short token of any shape only shows the button (the POST decides),
	// escaped in the hidden field.
	r := c.get(t, "/signin/link?token="+url.QueryEscape(`"><script>x</script>`), "")
	want(t, "GET /signin/link hostile token", r, http.StatusOK, "&#34;&gt;&lt;script&gt;")
	if strings.Contains(r.body, "<script>x") {
		t.Errorf("GET /signin/link echoes a token unescaped")
	}

	for name, tc := range map[string]struct {
		body string
		code int
		msg  string
	}{
		"missing":    {"", http.StatusForbidden, linkRefused},
		"empty":      {"token=", http.StatusForbidden, linkRefused},
		"overlong":   {"token=" + long, http.StatusForbidden, linkRefused},
		"non-base64": {"token=" + url.QueryEscape("!!*~ not base64 ~*!!"), http.StatusForbidden, linkRefused},
		"twice":      {"token=a&token=b", http.StatusForbidden, linkRefused},
		"not UTF-8":  {"token=%ff%fe" + strings.Repeat("%c3%28", 20), http.StatusBadRequest, "The form could not be read."},
		"NUL":        {"token=abc%00def", http.StatusBadRequest, "The form could not be read."},
	} {
		r := c.postRaw(t, "/signin/link", "", tc.body, "Origin", c.s.ConsoleURL)
		want(t, "POST /signin/link "+name, r, tc.code, tc.msg)
		if sessionSet(r) != "" {
			t.Errorf("POST /signin/link %s set a session", name)
		}
	}
	want(t, "GET /signin/link not UTF-8", c.get(t, "/signin/link?token=%ff", ""), http.StatusBadRequest, "This address is not valid")

	used := c.link(t, "acme", "used@acme.example", "viewer")
	c.signIn(t, used)
	want(t, "a used link", c.post(t, "/signin/link", "", url.Values{"token": {used}}), http.StatusForbidden, linkRefused)

	expired := c.link(t, "acme", "expired@acme.example", "viewer")
	if n := c.sql(t, `UPDATE civicgate.console_links SET expires_at = now() - interval '1 s' WHERE token_hash = $1`, tokenHash(expired)); n != 1 {
		t.Fatalf("expire link: %d rows", n)
	}
	want(t, "an expired link", c.post(t, "/signin/link", "", url.Values{"token": {expired}}), http.StatusForbidden, linkRefused)

	doomed := c.link(t, "doomed", "admin@doomed.example", "admin")
	doomedSession := c.signIn(t, c.link(t, "doomed", "member@doomed.example", "admin"))
	c.s.Run(c.s.Bins.Civicgate, "keys", "delete-org", "--org", "doomed")
	want(t, "a link of a deleted organization", c.post(t, "/signin/link", "", url.Values{"token": {doomed}}), http.StatusForbidden, linkRefused)
	c.endedSession(t, "a session of a deleted organization", doomedSession)

	// The same link POSTed by 10 goroutines at once: one session.
	race := c.link(t, "acme", "race@acme.example", "viewer")
	var wg sync.WaitGroup
	replies := make([]reply, 10)
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = c.post(t, "/signin/link", "", url.Values{"token": {race}})
		}()
	}
	close(start)
	wg.Wait()
	sessions, refused := 0, 0
	for _, r := range replies {
		switch {
		case r.code == http.StatusSeeOther && sessionSet(r) != "":
			sessions++
		case r.code == http.StatusForbidden && strings.Contains(r.body, linkRefused):
			refused++
		default:
			t.Errorf("concurrent link use: %d %.200s", r.code, r.body)
		}
	}
	if sessions != 1 || refused != 9 {
		t.Errorf("one link POSTed 10 times at once: %d sessions, %d refused; want 1 and 9", sessions, refused)
	}
	if n := c.count(t, `SELECT count(*) FROM civicgate.console_sessions WHERE email = 'race@acme.example'`); n != 1 {
		t.Errorf("one link POSTed 10 times at once: %d sessions stored, want 1", n)
	}
}

// endedSession checks a session cookie no longer signs anyone in.
func (c *consoleEnv) endedSession(t *testing.T, what, cookie string) {
	t.Helper()
	r := c.get(t, "/orgs/"+c.acmeID+"/keys", cookie)
	wantSignin(t, what+" GET", r)
	if ck := (&http.Response{Header: r.h}).Cookies(); len(ck) != 1 || ck[0].Name != consoleCookie || ck[0].MaxAge >= 0 {
		t.Errorf("%s: the dead cookie is not cleared: %v", what, r.h.Values("Set-Cookie"))
	}
	want(t, what+" POST", c.post(t, "/orgs/"+c.acmeID+"/keys/issue", cookie, url.Values{"env": {"test"}}),
		http.StatusUnauthorized, "Your session has ended")
}

func (c *consoleEnv) sessions(t *testing.T) {
	for _, p := range []string{"/", "/orgs", "/orgs/" + c.acmeID + "/", "/orgs/" + c.acmeID + "/keys", "/orgs/" + c.acmeID + "/usage.csv"} {
		wantSignin(t, "no cookie GET "+p, c.get(t, p, ""))
	}
	for _, p := range []string{"/signout", "/signout/everywhere", "/orgs/" + c.acmeID + "/keys/issue", "/orgs/" + c.acmeID + "/webhooks"} {
		want(t, "no cookie POST "+p, c.post(t, p, "", url.Values{"env": {"test"}}), http.StatusUnauthorized, "Your session has ended")
	}
	for name, v := range map[string]string{
		"forged":   strings.Repeat("A", 43),
		"garbage":  "%00%ff';--",
		"overlong": strings.Repeat("x", 3000),
	} {
		c.endedSession(t, "a "+name+" cookie", v)
	}

	out := c.signIn(t, c.link(t, "acme", "out@acme.example", "admin"))
	r := c.post(t, "/signout", out, nil)
	if r.code != http.StatusSeeOther || r.h.Get("Location") != "/signin" {
		t.Fatalf("sign out: %d to %q", r.code, r.h.Get("Location"))
	}
	c.endedSession(t, "a signed-out cookie", out)

	idle := c.signIn(t, c.link(t, "acme", "idle@acme.example", "admin"))
	c.sql(t, `UPDATE civicgate.console_sessions SET last_seen_at = now() - interval '31 minutes' WHERE id_hash = $1`, tokenHash(idle))
	c.endedSession(t, "an idle session", idle)

	old := c.signIn(t, c.link(t, "acme", "old@acme.example", "admin"))
	c.sql(t, `UPDATE civicgate.console_sessions SET expires_at = now() - interval '1 s' WHERE id_hash = $1`, tokenHash(old))
	c.endedSession(t, "a session past its lifetime", old)

	// Sign out everywhere ends the other sessions of the same email.
	a, b := c.signIn(t, c.link(t, "acme", "twice@acme.example", "admin")), c.signIn(t, c.link(t, "acme", "twice@acme.example", "admin"))
	if r := c.post(t, "/signout/everywhere", a, nil); r.code != http.StatusSeeOther {
		t.Fatalf("sign out everywhere: %d", r.code)
	}
	c.endedSession(t, "a session signed out everywhere", b)
}

func (c *consoleEnv) roles(t *testing.T) {
	org := "/orgs/" + c.acmeID
	keysBefore := c.keys(t, "acme")
	epsBefore := c.endpoints(t, c.acmeID)
	ep := org + "/webhooks/" + c.acmeEP
	viewerRefused := "Your role (viewer) can see this organization but not change it"
	for path, form := range map[string]url.Values{
		org + "/keys/issue":                      {"env": {"test"}},
		org + "/keys/rotate":                     {"env": {"live"}, "overlap": {"0s"}},
		org + "/keys/" + c.acmeKeyID + "/revoke": {"confirm": {c.acmeKeyID}},
		org + "/webhooks":                        {"url": {"https://example.org/v"}, "env": {"live"}},
		ep + "/rotate-secret":                    nil,
		ep + "/test":                             nil,
		ep + "/replay":                           nil,
		ep + "/delete":                           {"confirm": {c.acmeEP}},
		org + "/status":                          {"status": {"suspended"}},
		org + "/tier":                            {"tier": {"enterprise"}},
	} {
		msg := viewerRefused
		if strings.HasSuffix(path, "/status") || strings.HasSuffix(path, "/tier") {
			msg = "Only operators"
		}
		want(t, "viewer POST "+path, c.post(t, path, c.viewer, form), http.StatusForbidden, msg)
	}
	want(t, "viewer GET revoke", c.get(t, org+"/keys/"+c.acmeKeyID+"/revoke", c.viewer), http.StatusForbidden, viewerRefused)
	for _, p := range []string{"/status", "/tier"} {
		want(t, "admin POST "+p, c.post(t, org+p, c.admin, url.Values{"status": {"suspended"}, "tier": {"enterprise"}}),
			http.StatusForbidden, "Only operators")
	}
	if after := c.keys(t, "acme"); !sameKeys(keysBefore, after) {
		t.Errorf("refused actions changed acme's keys: %v → %v", keysBefore, after)
	}
	if n := c.endpoints(t, c.acmeID); n != epsBefore {
		t.Errorf("refused actions changed acme's endpoints: %d → %d", epsBefore, n)
	}
	if n := c.count(t, `SELECT count(*) FROM civicgate.organizations WHERE name = 'acme' AND status = 'active'`); n != 1 {
		t.Errorf("refused actions changed acme's status")
	}
	c.apiWorks(t, "after the viewer's refused revoke", c.acmeKey)

	// An admin's tier=enterprise is ignored: the key gets the org's tier.
	r := c.post(t, org+"/keys/issue", c.admin, url.Values{"env": {"test"}, "tier": {"enterprise"}})
	want(t, "admin issue with tier=enterprise", r, http.StatusOK, "Key issued", "cg_test_")
	for _, k := range c.keys(t, "acme") {
		if k.Tier != "paid_beta" {
			t.Errorf("an admin's issue form got a %s key %s (only operators choose tiers)", k.Tier, k.ID)
		}
	}
}

func sameKeys(a, b []listedKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (c *consoleEnv) csrf(t *testing.T) {
	path := "/orgs/" + c.acmeID + "/keys/issue"
	before := c.keys(t, "acme")
	for name, hdr := range map[string][]string{
		"Sec-Fetch-Site: cross-site": {"Sec-Fetch-Site", "cross-site"},
		"Sec-Fetch-Site: same-site":  {"Sec-Fetch-Site", "same-site"},
		"Origin: evil":               {"Origin", "https://evil.example"},
		"Origin: null":               {"Origin", "null"},
	} {
		r := c.postRaw(t, path, c.admin, "env=test", hdr...)
		want(t, "POST with "+name, r, http.StatusForbidden, "This form was sent from another site. Nothing was changed.")
		r = c.postRaw(t, "/signin/link", "", "token=x", hdr...)
		want(t, "sign-in POST with "+name, r, http.StatusForbidden, "This form was sent from another site")
	}
	if after := c.keys(t, "acme"); !sameKeys(before, after) {
		t.Errorf("cross-site POSTs changed acme's keys: %v → %v", before, after)
	}
	// A client that sends neither header is not a browser: Go's
	// CrossOriginProtection lets it through to the handler, which then needs
	// the session cookie (SameSite=Lax keeps a browser's cross-site POST
	// from carrying it). With the cookie it reaches the form's own check;
	// without, 401.
	r := c.postRaw(t, "/orgs/"+c.acmeID+"/webhooks", c.admin, "env=nowhere")
	want(t, "POST with no Origin, no Sec-Fetch-Site", r, http.StatusBadRequest, `id="error"`, "Choose the live or test environment.")
	want(t, "POST with no Origin, no cookie", c.postRaw(t, path, "", "env=test"), http.StatusUnauthorized)
	// The cookie is SameSite=Lax, Secure, HttpOnly, host-only.
	r = c.post(t, "/signin/link", "", url.Values{"token": {c.link(t, "acme", "attrs@acme.example", "viewer")}})
	sc := r.h.Get("Set-Cookie")
	for _, attr := range []string{"Path=/", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(sc, attr) {
			t.Errorf("session cookie lacks %s", attr)
		}
	}
	if strings.Contains(strings.ToLower(sc), "domain=") {
		t.Errorf("session cookie has a Domain")
	}
}
