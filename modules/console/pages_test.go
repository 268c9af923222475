package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestRefusedRotateKeepsTheForm: a rotation the two-live-key rule refuses
// says why once (the rule is already on the page) and shows the environment
// and overlap the member picked, not the defaults.
func TestRefusedRotateKeepsTheForm(t *testing.T) {
	g := startGateway(t)
	acme := g.newOrg(t, "acme", "paid")
	if _, err := keystore.Issue(t.Context(), g.pool, acme.name, "paid", keystore.EnvLive); err != nil {
		t.Fatal(err)
	}
	r := g.consoleDo(t, g.session(t, acme, keystore.RoleAdmin), http.MethodPost, "/orgs/"+acme.id+"/keys/rotate",
		form("env", "live", "overlap", "168h"))
	if r.code != http.StatusConflict {
		t.Fatalf("rotate with two active keys: %d\n%s", r.code, r.body)
	}
	if n := strings.Count(r.body, twoKeyRule); n != 1 {
		t.Errorf("the two-live-key rule appears %d times, want once", n)
	}
	if want := "Not rotated: two live keys are active, so the old one cannot stay live during an overlap of 168h0m0s. " +
		"Rotate with no overlap, or revoke one first."; !strings.Contains(r.body, want) {
		t.Errorf("the refusal does not say %q:\n%s", want, r.body)
	}
	if !strings.Contains(r.body, `<option value="168h" selected>`) {
		t.Errorf("the overlap picked (168h) is not selected any more:\n%s", r.body)
	}
	if strings.Count(r.body, " selected>") != 1 {
		t.Errorf("want exactly the overlap selected (env live is the first option):\n%s", r.body)
	}
	r = g.consoleDo(t, g.session(t, acme, keystore.RoleAdmin), http.MethodPost, "/orgs/"+acme.id+"/keys/issue", form("env", "live"))
	if r.code != http.StatusConflict || strings.Count(r.body, twoKeyRule) != 1 ||
		!strings.Contains(r.body, "Not issued: the organization already holds two live keys in the live environment.") {
		t.Errorf("issue of a third key: %d, the rule %d times\n%s", r.code, strings.Count(r.body, twoKeyRule), r.body)
	}
}

// TestUsageKeySelectorListsRevokedKeys: the usage page offers every key
// with usage in the period, revoked ones marked, the most used first.
func TestUsageKeySelectorListsRevokedKeys(t *testing.T) {
	g := startGateway(t)
	ctx := t.Context()
	acme := g.newOrg(t, "acme", "paid")
	old, err := keystore.Issue(ctx, g.pool, acme.name, "paid", keystore.EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.Revoke(ctx, g.pool, old.ID); err != nil {
		t.Fatal(err)
	}
	unused, err := keystore.Issue(ctx, g.pool, acme.name, "paid", keystore.EnvTest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.Revoke(ctx, g.pool, unused.ID); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().UTC().Truncate(time.Hour).Add(-48 * time.Hour)
	if _, err := g.pool.Exec(ctx, `INSERT INTO civicgate.usage_hour (key_id, org_id, start, admitted) VALUES ($1, $2, $3, 9000)`,
		old.ID, acme.id, hour); err != nil {
		t.Fatal(err)
	}
	r := g.consoleDo(t, g.session(t, acme, keystore.RoleViewer), http.MethodGet, "/orgs/"+acme.id+"/usage?range=7d", nil)
	if r.code != http.StatusOK {
		t.Fatalf("usage page: %d\n%s", r.code, r.body)
	}
	options := regexp.MustCompile(`<option value="(key_[^"]*)">[^<]*</option>`).FindAllStringSubmatch(r.body, -1)
	if len(options) != 2 || options[0][1] != old.ID || !strings.HasSuffix(options[0][0], ", revoked)</option>") ||
		strings.Contains(options[1][0], "revoked") {
		t.Fatalf("key options %q, want the revoked key with the usage first, marked revoked, then the live key; "+
			"not the revoked key without usage", options)
	}
	// The revoked key's chart is reachable from the selector.
	r = g.consoleDo(t, g.session(t, acme, keystore.RoleViewer), http.MethodGet, "/orgs/"+acme.id+"/usage?range=7d&key="+old.ID, nil)
	if r.code != http.StatusOK || !strings.Contains(r.body, `<option value="`+old.ID+`" selected>`) ||
		!strings.Contains(r.body, `id="total-admitted">9`+"\u202f"+`000<`) {
		t.Fatalf("usage of the revoked key: %d\n%s", r.code, r.body)
	}
}

// TestUsageListsTokenSubjects: access-token subjects with usage in the
// period are offered beside the keys, the most used first, and each one's
// chart and totals are reachable; a subject counted only for another
// organization is neither listed nor reachable (404).
func TestUsageListsTokenSubjects(t *testing.T) {
	g := startGateway(t)
	ctx := t.Context()
	acme := g.newOrg(t, "acme", "paid")
	other := g.newOrg(t, "other", "paid")
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	for _, row := range []struct {
		key, org string
		n        int
	}{{"jwt:sub:auth0|alice", acme.id, 40}, {"jwt:hash:0123456789abcdef0123456789abcdef", acme.id, 700}, {"jwt:sub:mallory", other.id, 5}} {
		if _, err := g.pool.Exec(ctx, `INSERT INTO civicgate.usage_hour (key_id, org_id, start, admitted) VALUES ($1, $2, $3, $4)`,
			row.key, row.org, hour, row.n); err != nil {
			t.Fatal(err)
		}
	}
	viewer := g.session(t, acme, keystore.RoleViewer)
	r := g.consoleDo(t, viewer, http.MethodGet, "/orgs/"+acme.id+"/usage", nil)
	if r.code != http.StatusOK {
		t.Fatalf("usage page: %d\n%s", r.code, r.body)
	}
	subjects := regexp.MustCompile(`<option value="(jwt:[^"]*)">([^<]*)</option>`).FindAllStringSubmatch(r.body, -1)
	if len(subjects) != 2 || subjects[0][1] != "jwt:hash:0123456789abcdef0123456789abcdef" || subjects[0][2] != subjects[0][1]+" (700 requests)" ||
		subjects[1][1] != "jwt:sub:auth0|alice" || !strings.Contains(r.body, `<optgroup label="Access-token subjects">`) {
		t.Fatalf("token subject options %q, want the two of acme, the most used first", subjects)
	}
	if !strings.Contains(r.body, `id="total-admitted">740<`) {
		t.Errorf("the organization's total does not count its token subjects:\n%s", r.body)
	}
	r = g.consoleDo(t, viewer, http.MethodGet, "/orgs/"+acme.id+"/usage?key="+url.QueryEscape("jwt:sub:auth0|alice"), nil)
	if r.code != http.StatusOK || !strings.Contains(r.body, `<option value="jwt:sub:auth0|alice" selected>`) ||
		!strings.Contains(r.body, `id="total-admitted">40<`) || !strings.Contains(r.body, "access-token subject jwt:sub:auth0|alice") {
		t.Fatalf("usage of a token subject: %d\n%s", r.code, r.body)
	}
	r = g.consoleDo(t, viewer, http.MethodGet, "/orgs/"+acme.id+"/usage.csv?key="+url.QueryEscape("jwt:sub:auth0|alice"), nil)
	if r.code != http.StatusOK || !strings.Contains(r.body, "jwt:sub:auth0|alice") || strings.Contains(r.body, "jwt:hash:") {
		t.Fatalf("CSV of a token subject: %d\n%s", r.code, r.body)
	}
	for _, foreign := range []string{"jwt:sub:mallory", "jwt:sub:nobody"} {
		if r := g.consoleDo(t, viewer, http.MethodGet, "/orgs/"+acme.id+"/usage?key="+url.QueryEscape(foreign), nil); r.code != http.StatusNotFound {
			t.Errorf("usage of %s from acme: %d, want 404", foreign, r.code)
		}
	}
}

// TestOrganizationsFlagUnknownTiers: the organizations page flags an
// organization whose keys carry a tier no configuration of this gateway
// defines (each of its requests is refused 403), and only that one.
func TestOrganizationsFlagUnknownTiers(t *testing.T) {
	g := startGateway(t)
	gold := g.newOrg(t, "gold-org", "gold")
	g.newOrg(t, "paid-org", "paid")
	r := g.consoleDo(t, g.session(t, org{name: "ops"}, keystore.RoleOperator), http.MethodGet, "/orgs", nil)
	if r.code != http.StatusOK {
		t.Fatalf("organizations: %d\n%s", r.code, r.body)
	}
	flag := `<strong class="unknown-tier">tier gold is not defined in this configuration: its keys are refused</strong>`
	if strings.Count(r.body, flag) != 1 || strings.Count(r.body, `class="unknown-tier"`) != 1 {
		t.Fatalf("want exactly %s flagged:\n%s", gold.name, r.body)
	}
	row := r.body[strings.Index(r.body, `href="/orgs/`+gold.id+`/"`):]
	if !strings.HasPrefix(row[strings.Index(row, "<td data-label=\"Tiers\">"):], `<td data-label="Tiers">gold `+flag) {
		t.Fatalf("the flag is not in %s's row:\n%s", gold.name, r.body)
	}
}

// TestUnusableEndpointShown: an endpoint the sidecar set aside shows its
// state and reason on the list and on its page, as the API's JSON does.
func TestUnusableEndpointShown(t *testing.T) {
	g := startGateway(t)
	acme := g.newOrg(t, "acme", "paid")
	id := g.createEndpoint(t, acme.key, "https://example.org/hook")
	const reason = "endpoint secret cannot be opened with the sealing key"
	if _, err := g.pool.Exec(t.Context(), `UPDATE civicgate.webhook_endpoints SET status = 'unusable', unusable_reason = $2 WHERE id = $1`,
		id, reason); err != nil {
		t.Fatal(err)
	}
	s := g.session(t, acme, keystore.RoleViewer)
	for _, path := range []string{"/orgs/" + acme.id + "/webhooks", "/orgs/" + acme.id + "/webhooks/" + id} {
		r := g.consoleDo(t, s, http.MethodGet, path, nil)
		if r.code != http.StatusOK || !strings.Contains(r.body, `class="status-unusable"`) || !strings.Contains(r.body, "unusable ("+reason+")") {
			t.Errorf("%s: %d, want the state and its reason:\n%s", path, r.code, r.body)
		}
	}
}

// TestOrganizationsCountUsableKeys: the organizations page counts the keys
// accepted now, in either environment — not a rotating key whose overlap
// has ended — under a heading that does not read as the live environment,
// and lists the tiers of those keys only.
func TestOrganizationsCountUsableKeys(t *testing.T) {
	g := startGateway(t)
	ctx := t.Context()
	o := g.newOrg(t, "rotated", "paid")
	if _, err := keystore.Issue(ctx, g.pool, o.name, "paid", keystore.EnvTest); err != nil {
		t.Fatal(err)
	}
	rot, err := keystore.Rotate(ctx, g.pool, keystore.RotateSpec{Org: o.name, Env: keystore.EnvLive, Overlap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// The overlap ended a minute ago; the key's status still reads rotating.
	if _, err := g.pool.Exec(ctx, `UPDATE civicgate.api_keys SET rotates_out_at = now() - interval '1 minute', tier = 'gold'
		WHERE id = $1 AND status = 'rotating'`, rot.Rotating); err != nil {
		t.Fatal(err)
	}
	session := g.session(t, org{name: "ops"}, keystore.RoleOperator)
	r := g.consoleDo(t, session, http.MethodGet, "/orgs", nil)
	if r.code != http.StatusOK {
		t.Fatalf("organizations: %d\n%s", r.code, r.body)
	}
	row := r.body[strings.Index(r.body, `href="/orgs/`+o.id+`/"`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(r.body, `<th scope="col" class="num">Usable keys</th>`) || strings.Contains(r.body, "Live keys") ||
		!strings.Contains(row, `<td class="num" data-label="Usable keys">2</td>`) || strings.Contains(row, "gold") {
		t.Fatalf("want 2 usable keys (the new live key and the test key) and tier paid only in %s's row:\n%s", o.name, row)
	}
	r = g.consoleDo(t, session, http.MethodGet, "/orgs/"+o.id+"/", nil)
	if r.code != http.StatusOK || !strings.Contains(r.body, "<h2>Usable keys</h2>") || strings.Contains(r.body, "Live keys") {
		t.Fatalf("overview: %d\n%s", r.code, r.body)
	}
}

// TestRevokeNewerKeyDuringOverlapWarns: revoking the new key while the old
// one is rotating out says on the page that the organization is left with a
// key that stops working at the end of the overlap, and what to do; a
// revocation that leaves an active key says nothing of the kind.
func TestRevokeNewerKeyDuringOverlapWarns(t *testing.T) {
	g := startGateway(t)
	acme := g.newOrg(t, "acme", "paid")
	rot, err := keystore.Rotate(t.Context(), g.pool, keystore.RotateSpec{Org: acme.name, Env: keystore.EnvLive, Overlap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	session := g.session(t, acme, keystore.RoleAdmin)
	r := g.consoleDo(t, session, http.MethodPost, "/orgs/"+acme.id+"/keys/"+rot.ID+"/revoke", form("confirm", rot.ID))
	want := "Key " + rot.ID + " revoked. Requests with it are refused from now on. Warning: the organization is left with no active live key, only " +
		rot.Rotating + ", which stops working at " + rot.Until.UTC().Format("2006-01-02 15:04 UTC") +
		" (the end of its rotation overlap). Issue a new live key before then, above or with: civicgate keys issue --org acme --tier paid --env live"
	if r.code != http.StatusOK || !strings.Contains(r.body, `<p class="notice" role="status" id="notice">`+want+`</p>`) {
		t.Fatalf("revoke: %d, want the notice %q:\n%s", r.code, want, r.body)
	}
	is, err := keystore.Issue(t.Context(), g.pool, acme.name, "paid", keystore.EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	r = g.consoleDo(t, session, http.MethodPost, "/orgs/"+acme.id+"/keys/"+rot.Rotating+"/revoke", form("confirm", rot.Rotating))
	if r.code != http.StatusOK || !strings.Contains(r.body, "Key "+rot.Rotating+" revoked.") || strings.Contains(r.body, "Warning") {
		t.Fatalf("revoke beside the active %s: %d\n%s", is.ID, r.code, r.body)
	}
}
