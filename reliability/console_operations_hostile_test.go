package reliability

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// The console's operations page against hostile requests (docs/design.md
// D77): another organization's id in the URL in every spelling, query
// parameters that try to switch the organization, oversized and malformed
// windows, and markup where the usage tables hold text. The operations are
// run through the real gateway; the literal and the variable a caller sent
// appear on no page and in no table.

const (
	literalMarker  = "LITERAL-MARKER-7c1f"
	variableMarker = "VARIABLE-MARKER-9d2e"
)

func TestConsoleOperationsHostile(t *testing.T) {
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	s.Prepare()
	c := &consoleEnv{s: s}
	c.acmeKey, c.acmeKeyID = s.IssueKey("acme", "paid_beta", "live")
	c.rivalKey, c.rivalKeyID = s.IssueKey("rival", "paid_beta", "live")
	c.secret(c.acmeKey, c.rivalKey)
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")

	run := func(key, body string) {
		t.Helper()
		r := send(t.Context(), s.Client, s.HTTPSURL, &call{method: http.MethodPost, path: "/v1/graphql", key: key, ctype: "application/json", body: body})
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %v %.300s", body, r.status, r.err, r.body)
		}
	}
	run(c.acmeKey, `{"query":"query AcmeSearch($q: String) { a: bills(input:{q:$q, limit:1}) { items { id } } b: bills(input:{q:\"`+
		literalMarker+`\", limit:1}) { nextCursor } }","variables":{"q":"`+variableMarker+`"}}`)
	run(c.rivalKey, `{"query":"query RivalOnly { members(input:{limit:1}) { items { name } } }"}`)
	stack.WaitFor(t, 30*time.Second, "both organizations' operations counted", func() error {
		if n := c.count(t, `SELECT count(DISTINCT org_id) FROM civicgate.usage_operation_hour`); n != 2 {
			return fmt.Errorf("%d organizations counted", n)
		}
		return nil
	})
	if n := c.count(t, `SELECT count(*) FROM civicgate.operations WHERE normalized LIKE '%MARKER%' OR op_name LIKE '%MARKER%'`); n != 0 {
		t.Errorf("%d operations hold the caller's literal or variable", n)
	}

	c.admin = c.signIn(t, c.link(t, "acme", "admin@acme.example", "admin"))
	c.viewer = c.signIn(t, c.link(t, "acme", "viewer@acme.example", "viewer"))
	c.rAdmin = c.signIn(t, c.link(t, "rival", "admin@rival.example", "admin"))
	c.acmeID, c.rivalID = c.orgOf(t, c.admin), c.orgOf(t, c.rAdmin)
	own := "/orgs/" + c.acmeID + "/operations"

	// page checks an answer shows none of rival's operations and none of
	// the caller's values.
	page := func(t *testing.T, what string, r reply) {
		t.Helper()
		for _, s := range []string{"RivalOnly", "Member.name", "Query.members", literalMarker, variableMarker} {
			if strings.Contains(r.body, s) {
				t.Errorf("%s shows %q", what, s)
			}
		}
	}

	t.Run("own", func(t *testing.T) {
		r := c.get(t, own, c.viewer)
		want(t, "acme's page", r, http.StatusOK, "AcmeSearch", "Query.bills", "BillsInput.q")
		page(t, "acme's page", r)
	})

	t.Run("crossorg", func(t *testing.T) {
		for _, p := range []string{
			"/orgs/" + c.rivalID + "/operations",
			"/orgs/" + strings.ToUpper(c.rivalID) + "/operations",
			"/orgs/" + url.PathEscape(c.rivalID+" ") + "/operations",
			"/orgs/rival/operations", // the name, not the id
			"/orgs/" + c.rivalID + "/operations?window=30d",
			"/orgs/" + c.rivalID + "%2Foperations",
			"/orgs/" + c.acmeID + "%2F..%2F" + c.rivalID + "/operations",
		} {
			for _, who := range []string{c.viewer, c.admin} {
				r := c.get(t, p, who)
				if loc := r.h.Get("Location"); r.code == http.StatusTemporaryRedirect && strings.HasPrefix(loc, "/orgs/") {
					// the mux's redirect to the cleaned path: it shows
					// nothing, and where it leads is refused
					page(t, p, r)
					r = c.get(t, loc, who)
				}
				if r.code != http.StatusNotFound {
					t.Errorf("GET %s as acme's member: %d, want 404: %.300s", p, r.code, r.body)
				}
				page(t, p, r)
			}
		}
		r := c.get(t, "/orgs/"+c.rivalID+"/operations", c.rAdmin)
		want(t, "rival's own page", r, http.StatusOK, "RivalOnly")
		if strings.Contains(r.body, "AcmeSearch") {
			t.Error("rival's page shows acme's operation")
		}
	})

	t.Run("orgswitch", func(t *testing.T) {
		for _, q := range []string{
			"org=" + c.rivalID, "org=rival", "org_id=" + c.rivalID, "orgs=" + c.rivalID,
			"key=" + c.rivalKeyID, "window=24h&org=" + c.rivalID + "&org=" + c.rivalID,
		} {
			r := c.get(t, own+"?"+q, c.viewer)
			want(t, "?"+q, r, http.StatusOK, "AcmeSearch")
			page(t, "?"+q, r)
		}
		// a header naming the organization changes nothing either
		req := c.request(t, http.MethodGet, own, nil)
		req.Header.Set("X-Civic-Org", c.rivalID)
		page(t, "X-Civic-Org", c.do(t, req, c.viewer))
		// a session is the member's: rival's cookie reads rival's page only
		want(t, "rival's session on acme's page", c.get(t, own, c.rAdmin), http.StatusNotFound)
	})

	t.Run("windows", func(t *testing.T) {
		for _, w := range []string{"90d", "31d", "1000000d", "9223372036854775807ns", "-1h", "0s", "24h0m", " 24h", "24h ",
			"7D", "30d;", "<svg onload=alert(1)>", strings.Repeat("9", 8000)} {
			r := c.get(t, own+"?window="+url.QueryEscape(w), c.viewer)
			want(t, "window "+w[:min(len(w), 20)], r, http.StatusBadRequest, "Choose 24h, 7d or 30d.")
			if strings.Contains(r.body, "<svg") || strings.Contains(r.body, "99999999") {
				t.Errorf("window %.20q is echoed", w)
			}
		}
		// the first of repeated windows is the one read, and it is checked
		want(t, "window 30d then 999d", c.get(t, own+"?window=30d&window=999d", c.viewer), http.StatusOK, `<option value="30d" selected>`)
		want(t, "window 999d then 30d", c.get(t, own+"?window=999d&window=30d", c.viewer), http.StatusBadRequest)
	})

	t.Run("markup", func(t *testing.T) {
		// rows no gateway writes (names are GraphQL names), as a damaged or
		// foreign writer might: the page shows them as text
		const name, reason = `<script>alert(1)</script>`, `<img src=x onerror=alert(2)> & "q"`
		hash := strings.Repeat("f", 64)
		hour := time.Now().UTC().Truncate(time.Hour)
		c.sql(t, `INSERT INTO civicgate.usage_operation_hour (key_id, org_id, start, op_hash, op_type, op_name, requests, latency_buckets, last_seen)
			VALUES ($1, $2, $3, $4, 'query', $5, 3, array_fill(0::bigint, ARRAY[16]), now())`, c.acmeKeyID, c.acmeID, hour, hash, name)
		c.sql(t, `INSERT INTO civicgate.operations (op_hash, op_type, op_name, normalized, first_seen, last_seen) VALUES ($1, 'query', $2, '', now(), now())`, hash, name)
		c.sql(t, `INSERT INTO civicgate.operation_coordinates (op_hash, coordinate, deprecated_reason) VALUES ($1, $2, $3)`, hash, "<b>Query.x</b>", reason)
		r := c.get(t, own, c.viewer)
		want(t, "markup rows", r, http.StatusOK, "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt; &amp; &#34;q&#34;",
			"&lt;b&gt;Query.x&lt;/b&gt;")
		for _, raw := range []string{name, "<img", "<b>Query"} {
			if strings.Contains(r.body, raw) {
				t.Errorf("the page holds %q as markup", raw)
			}
		}
	})

	t.Run("operator", func(t *testing.T) {
		out := s.Run(s.Bins.Civicgate, "console", "link", "--email", "ops@civic.example", "--role", "operator")
		m := linkToken.FindStringSubmatch(out)
		if m == nil {
			t.Fatal("console link printed no link")
		}
		c.secret(m[1])
		op := c.signIn(t, m[1])
		want(t, "the operator on acme's page", c.get(t, own, op), http.StatusOK, "AcmeSearch")
		want(t, "the operator on rival's page", c.get(t, "/orgs/"+c.rivalID+"/operations", op), http.StatusOK, "RivalOnly")
	})

	s.CheckLogs(t, c.known()...)
}
