package console

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/auth/keycmd"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// lastAuditID is the id of the newest audit entry (0: none).
func (g *gateway) lastAuditID(t *testing.T) int64 {
	t.Helper()
	var id int64
	if err := g.pool.QueryRow(t.Context(), `SELECT coalesce(max(id), 0) FROM civicgate.audit_log`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// auditAfter returns the one entry written after the entry with id since.
func (g *gateway) auditAfter(t *testing.T, since int64, what string) keystore.AuditEntry {
	t.Helper()
	entries, _, err := keystore.ListAudit(t.Context(), g.pool, keystore.AuditQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var out []keystore.AuditEntry
	for _, e := range entries {
		if e.ID > since {
			out = append(out, e)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%s: %d audit entries written, want 1: %+v", what, len(out), out)
	}
	return out[0]
}

// targetKind says what an audit entry's target names.
func (g *gateway) targetKind(t *testing.T, o org, target string) string {
	t.Helper()
	if _, err := keystore.KeyOrg(t.Context(), g.pool, target); err == nil {
		return "key id"
	}
	switch {
	case strings.HasPrefix(target, "we_"):
		return "endpoint id"
	case target == o.name:
		return "organization name"
	}
	return "something else: " + target
}

// keysCLI runs `civicgate keys args…` on the gateway's database.
func (g *gateway) keysCLI(t *testing.T, args ...string) {
	t.Helper()
	var out, errs bytes.Buffer
	env := map[string]string{"DATABASE_URL": g.dsn, "USER": "ops"}
	if code := keycmd.Run(t.Context(), args, &out, &errs, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("keys %v: exit %d\n%s%s", args, code, out.String(), errs.String())
	}
}

// TestAuditAlikeFromEverySide makes every change that two sides offer —
// the key commands and the console, the console and the webhook endpoint API
// — from each side, and checks that both write the same action naming the
// same kind of target: a key id for key changes, the organization's name for
// organization changes, an endpoint id for webhook changes.
func TestAuditAlikeFromEverySide(t *testing.T) {
	g := startGateway(t)
	o := g.newOrg(t, "both", "paid")
	session := g.session(t, o, keystore.RoleOperator)
	keys := func() []keystore.KeyInfo {
		ks, err := keystore.List(t.Context(), g.pool, keystore.ListFilter{Org: o.name, Env: keystore.EnvTest})
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	liveTest := func() string { // the id of a live test key
		for _, k := range keys() {
			if k.Status == keystore.StatusActive {
				return k.ID
			}
		}
		t.Fatal("no active test key")
		return ""
	}
	console := func(path string, kv ...string) func() {
		return func() {
			if r := g.consoleDo(t, session, http.MethodPost, "/orgs/"+o.id+path, form(kv...)); r.code >= 400 {
				t.Fatalf("console %s: %d\n%.2000s", path, r.code, r.body)
			}
		}
	}
	cli := func(args ...string) func() { return func() { g.keysCLI(t, args...) } }
	type side struct {
		name string
		do   func()
	}
	for _, tc := range []struct {
		action, kind string
		sides        []side
	}{
		{"key.issue", "key id", []side{
			{"cli", cli("issue", "--org", o.name, "--tier", "paid", "--env", "test")},
			{"console", console("/keys/issue", "env", "test")}}},
		{"key.rotate", "key id", []side{
			{"cli", cli("rotate", "--org", o.name, "--env", "test", "--overlap", "0")},
			{"console", console("/keys/rotate", "env", "test", "overlap", "0s")}}},
		{"key.revoke", "key id", []side{
			{"cli", func() { g.keysCLI(t, "revoke", liveTest()) }},
			{"console", func() { id := liveTest(); console("/keys/"+id+"/revoke", "confirm", id)() }}}},
		{"org.suspend", "organization name", []side{
			{"cli", cli("suspend", "--org", o.name)},
			{"console", console("/status", "status", "suspended")}}},
		{"org.resume", "organization name", []side{
			{"cli", cli("resume", "--org", o.name)},
			{"console", console("/status", "status", "active")}}},
		{"org.set_tier", "organization name", []side{
			{"cli", cli("set-tier", "--org", o.name, "--tier", "paid")},
			{"console", console("/tier", "tier", "paid")}}},
	} {
		for _, s := range tc.sides {
			before := g.lastAuditID(t)
			s.do()
			e := g.auditAfter(t, before, s.name+" "+tc.action)
			if e.Action != tc.action || g.targetKind(t, o, e.Target) != tc.kind || e.OrgID != o.id {
				t.Errorf("%s %s wrote %s on %q (%s) in %q, want %s on a %s in %s", s.name, tc.action, e.Action, e.Target,
					g.targetKind(t, o, e.Target), e.OrgID, tc.action, tc.kind, o.id)
			}
		}
	}

	// The webhook changes, from the console and through the API.
	admin := g.session(t, o, keystore.RoleAdmin)
	g.awaitAPI(t, o.key, http.StatusOK) // resumed above
	for _, a := range webhookActions {
		if !a.change {
			continue
		}
		var actions []string
		for _, via := range []string{"console", "API"} {
			id := g.createEndpoint(t, o.key, "https://example.org/"+via)
			before := g.lastAuditID(t)
			var r reply
			if via == "console" {
				r = a.console(t, g, admin, o, id, "https://example.org/new-"+via)
			} else {
				r = a.api(t, g, o.key, id, "https://example.org/new-"+via)
			}
			check(t, via+" "+a.name, r, 0)
			e := g.auditAfter(t, before, via+" "+a.name)
			if kind := g.targetKind(t, o, e.Target); kind != "endpoint id" || e.OrgID != o.id {
				t.Errorf("%s %s wrote %s on %q (%s), want an endpoint id", via, a.name, e.Action, e.Target, kind)
			}
			actions = append(actions, e.Action)
			g.deleteEndpoints(t, o)
		}
		if actions[0] != actions[1] || !strings.HasPrefix(actions[0], "webhook.") {
			t.Errorf("%s: the console writes %q, the API %q", a.name, actions[0], actions[1])
		}
	}
}

// deleteEndpoints deletes every endpoint of o through the API (under the
// endpoint limit for the next action).
func (g *gateway) deleteEndpoints(t *testing.T, o org) {
	t.Helper()
	rows, err := g.pool.Query(t.Context(), `SELECT id FROM civicgate.webhook_endpoints WHERE org_id = $1`, o.id)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		check(t, "delete "+id, g.apiDo(t, o.key, http.MethodDelete, "/v1/webhook-endpoints/"+id, ""), 0)
	}
}
