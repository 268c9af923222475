package console

import (
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestKeysPageLifecycle: a key issued from the console with a name, an
// expiry and labels keeps them (the key store's record), the page names its
// expiry at once and lists the name, the labels and the expiry — markup in
// them escaped, never rendered; the audit entry says what the key commands'
// says; an expired key is listed as expired and no longer counted as usable;
// each bad value is refused with a sentence that quotes nothing of it.
func TestKeysPageLifecycle(t *testing.T) {
	g := startGateway(t)
	acme := g.newOrg(t, "acme", "paid")
	session := g.session(t, acme, keystore.RoleAdmin)
	const hostileName = `<script>alert(1)</script> & "nightly"`
	const hostileLabel = `<img src=x onerror=alert(2)>`

	before := g.lastAuditID(t)
	r := g.consoleDo(t, session, http.MethodPost, "/orgs/"+acme.id+"/keys/issue",
		form("env", "test", "name", hostileName, "expires", "30d", "labels", "team=data\r\nsrc="+hostileLabel+"\n\n"))
	if r.code != http.StatusOK || !strings.Contains(r.body, `id="new-key"`) {
		t.Fatalf("issue: %d\n%.3000s", r.code, r.body)
	}
	if !strings.Contains(r.body, `id="expires"`) || !strings.Contains(r.body, "API key expired") {
		t.Errorf("the new key's expiry is not announced:\n%.3000s", r.body)
	}
	keys, err := keystore.List(t.Context(), g.pool, keystore.ListFilter{Org: acme.name, Env: keystore.EnvTest})
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys: %+v %v", keys, err)
	}
	k := keys[0]
	if k.Name != hostileName || k.Labels["team"] != "data" || k.Labels["src"] != hostileLabel || k.ExpiresAt == nil ||
		k.ExpiresAt.Sub(time.Now().Add(30*24*time.Hour)).Abs() > time.Minute {
		t.Fatalf("stored %+v", k)
	}
	e := g.auditAfter(t, before, "console issue")
	want := "test, tier paid" + keystore.Lifecycle{Name: k.Name, Labels: k.Labels, ExpiresAt: *k.ExpiresAt}.AuditDetail()
	if e.Detail != want {
		t.Errorf("audit detail %q, want %q (as `civicgate keys issue` writes it)", e.Detail, want)
	}

	page := g.consoleDo(t, session, http.MethodGet, "/orgs/"+acme.id+"/keys", nil)
	row := rowOf(t, page.body, k.ID)
	for _, want := range []string{html.EscapeString(hostileName), "<code>team=data</code>", "<code>src=" + html.EscapeString(hostileLabel) + "</code>",
		k.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC")} {
		if !strings.Contains(row, want) && !strings.Contains(row, strings.ReplaceAll(want, "&#34;", "&quot;")) {
			t.Errorf("the key's row lacks %q:\n%s", want, row)
		}
	}
	for _, raw := range []string{"<script>", "<img"} {
		if strings.Contains(page.body, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}

	// Expired (as it is after its 30 days): listed so, not usable, and the
	// two-live-key rule leaves room for two more test keys.
	if _, err := g.pool.Exec(t.Context(), `UPDATE civicgate.api_keys SET created_at = now() - interval '31 days', expires_at = now() - interval '1 day' WHERE id = $1`, k.ID); err != nil {
		t.Fatal(err)
	}
	page = g.consoleDo(t, session, http.MethodGet, "/orgs/"+acme.id+"/keys", nil)
	if row := rowOf(t, page.body, k.ID); !strings.Contains(row, `class="status-expired"`) || strings.Contains(row, "Revoke…") {
		t.Errorf("the expired key's row (expired, nothing to revoke):\n%s", row)
	}
	for range 2 {
		if r := g.consoleDo(t, session, http.MethodPost, "/orgs/"+acme.id+"/keys/issue", form("env", "test")); r.code != http.StatusOK {
			t.Fatalf("issue beside an expired key: %d\n%.2000s", r.code, r.body)
		}
	}

	for what, f := range map[string][]string{
		"past expiry":   {"expires", "2020-01-01T00:00:00Z"},
		"bad expiry":    {"expires", "next week"},
		"no offset":     {"expires", "2030-01-01T00:00:00"},
		"year 10000":    {"expires", "10000-01-01T00:00:00Z"},
		"long name":     {"name", strings.Repeat("n", 101)},
		"control name":  {"name", "a\x1bb"},
		"bad label key": {"labels", "Team=x"},
		"no equals":     {"labels", "team"},
		"tab in value":  {"labels", "k=a\tb"},
		"key in a name": {"name", "cg_live_" + strings.Repeat("A", 43)},
	} {
		r := g.consoleDo(t, session, http.MethodPost, "/orgs/"+acme.id+"/keys/issue", form(append([]string{"env", "live"}, f...)...))
		if r.code != http.StatusBadRequest || !strings.Contains(r.body, "Not issued: ") {
			t.Errorf("%s: %d\n%.1500s", what, r.code, r.body)
		}
		if alert := alertOf(r.body); strings.Contains(alert, html.EscapeString(f[1])) && what != "past expiry" {
			t.Errorf("%s: the refusal quotes the value: %s", what, alert)
		}
	}
	if keys, _ := keystore.List(t.Context(), g.pool, keystore.ListFilter{Org: acme.name, Env: keystore.EnvLive}); len(keys) != 1 {
		t.Errorf("refused issues made keys: %+v", keys)
	}
}

// rowOf returns the keys table's row of key id.
func rowOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<tr id="key-`+id+`">`)
	if i < 0 {
		t.Fatalf("no row for %s in\n%.4000s", id, page)
	}
	j := strings.Index(page[i:], "</tr>")
	return page[i : i+j]
}

// alertOf returns the page's refusal (the role="alert" paragraph).
func alertOf(page string) string {
	_, rest, _ := strings.Cut(page, `id="error">`)
	alert, _, _ := strings.Cut(rest, "</p>")
	return alert
}
