package console

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestGrantShown: an organization's grant in force is shown on its
// overview, beside its tier's figures, to its members and to an operator,
// with its figures worded for the tier and its end; the organizations list
// shows it to the operator; an ended grant and another organization's grant
// are shown to nobody, and no query parameter shows another's.
func TestGrantShown(t *testing.T) {
	g := startGateway(t)
	ctx := t.Context()
	acme := g.newOrg(t, "acme", "paid")
	other := g.newOrg(t, "other", "paid")
	past := g.newOrg(t, "past", "free")
	until := time.Now().Add(48 * time.Hour).Truncate(time.Minute).UTC()
	if _, err := keystore.SetGrant(ctx, g.pool, acme.name, keystore.Grant{Requests: 5000, Cost: 700, Until: until}); err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.SetGrant(ctx, g.pool, past.name, keystore.Grant{Requests: 90_000, Until: until}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.pool.Exec(ctx, `UPDATE civicgate.org_grants SET created_at = now() - interval '2 hours', until = now() - interval '1 minute' WHERE org_id = $1`, past.id); err != nil {
		t.Fatal(err)
	}
	end := until.Format("2006-01-02 15:04 UTC")
	granted := []string{`id="grant"`, "until " + end, "Request quota: 5\u202f000 per minute for tier paid (the tier&#39;s other windows in proportion)",
		"Cost budget: tier paid has none, so the grant gives none"}

	overview := func(session, id string) reply { return g.consoleDo(t, session, http.MethodGet, "/orgs/"+id+"/", nil) }
	viewer := g.session(t, acme, keystore.RoleViewer)
	r := overview(viewer, acme.id)
	for _, want := range granted {
		if r.code != http.StatusOK || !strings.Contains(r.body, want) {
			t.Errorf("acme's overview: %d, lacks %q:\n%s", r.code, want, r.body)
		}
	}
	for _, q := range []string{"?org=" + other.id, "?org_id=" + past.id} {
		if r := g.consoleDo(t, viewer, http.MethodGet, "/orgs/"+acme.id+"/"+q, nil); strings.Count(r.body, `id="grant"`) != 1 ||
			strings.Contains(r.body, "90\u202f000") {
			t.Errorf("acme's overview with %s: %d", q, r.code)
		}
	}
	if r := overview(viewer, other.id); r.code != http.StatusNotFound || strings.Contains(r.body, "5\u202f000") {
		t.Errorf("other's overview from acme's member: %d", r.code)
	}
	if r := overview(g.session(t, other, keystore.RoleAdmin), other.id); r.code != http.StatusOK || strings.Contains(r.body, `id="grant"`) ||
		strings.Contains(r.body, "5\u202f000") {
		t.Errorf("other's own overview shows a grant: %d", r.code)
	}
	if r := overview(g.session(t, past, keystore.RoleViewer), past.id); r.code != http.StatusOK || strings.Contains(r.body, `id="grant"`) {
		t.Errorf("an ended grant is shown: %d", r.code)
	}

	operator := g.session(t, org{name: "ops"}, keystore.RoleOperator)
	r = overview(operator, acme.id)
	for _, want := range granted {
		if !strings.Contains(r.body, want) {
			t.Errorf("the operator's acme overview lacks %q", want)
		}
	}
	for _, id := range []string{other.id, past.id} {
		if r := overview(operator, id); r.code != http.StatusOK || strings.Contains(r.body, `id="grant"`) {
			t.Errorf("the operator's overview of %s shows a grant: %d", id, r.code)
		}
	}
	r = g.consoleDo(t, operator, http.MethodGet, "/orgs", nil)
	cell := func(id string) string {
		row := r.body[strings.Index(r.body, `href="/orgs/`+id+`/"`):]
		row = row[strings.Index(row, `data-label="Grant">`)+len(`data-label="Grant">`):]
		return row[:strings.Index(row, "</td>")]
	}
	if c := cell(acme.id); c != "5\u202f000 requests, 700 cost points until "+end {
		t.Errorf("acme's grant cell %q", c)
	}
	for _, id := range []string{other.id, past.id} {
		if c := cell(id); c != "—" {
			t.Errorf("grant cell of %s: %q", id, c)
		}
	}
}
