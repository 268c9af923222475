package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
)

// TestEndpointAPIChangesAudited: every change made through
// /v1/webhook-endpoints is in the audit log the console and `civicgate
// audit` read, with the console's action names and the endpoint id as the
// target, the key id as the actor; reads and refusals write nothing.
func TestEndpointAPIChangesAudited(t *testing.T) {
	db := feedtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := keystore.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	acme, err := keystore.Issue(ctx, db.Pool, "acme", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	other, err := keystore.Issue(ctx, db.Pool, "other", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, db.DSN, "")

	r := g.do(t, "POST", "/v1/webhook-endpoints", acme.Key, `{"url":"https://example.org/hook"}`)
	want(t, r, 201, "")
	id := r.json(t)["id"].(string)
	want(t, g.do(t, "GET", "/v1/webhook-endpoints/"+id, acme.Key, ""), 200, "")
	want(t, g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/rotate-secret", acme.Key, ""), 200, "")
	r = g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/test", acme.Key, "")
	want(t, r, 202, "")
	event := r.json(t)["event_id"].(string)
	want(t, g.do(t, "POST", "/v1/webhook-endpoints/"+id+"/replay", acme.Key, `{}`), 202, "")
	want(t, g.do(t, "DELETE", "/v1/webhook-endpoints/"+id, other.Key, ""), 404, "") // refused: not audited
	want(t, g.do(t, "DELETE", "/v1/webhook-endpoints/"+id, acme.Key, ""), 204, "")

	entries, _, err := keystore.ListAudit(ctx, db.Pool, keystore.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(entries) - 1; i >= 0; i-- { // oldest first
		e := entries[i]
		if e.Actor != acme.ID || e.Role != AuditRoleAPI || e.OrgID != acme.OrgID || e.Target != id || e.Org != "acme" || e.ClientAddr == "" {
			t.Errorf("entry %+v: want actor %s, role %s, org %s, target %s, a client address", e, acme.ID, AuditRoleAPI, acme.OrgID, id)
		}
		got = append(got, e.Action+" "+e.Detail)
	}
	wantActions := []string{"webhook.create https://example.org/hook", "webhook.rotate_secret ", "webhook.test " + event,
		"webhook.replay from ", "webhook.delete "}
	if strings.Join(got, "|") != strings.Join(wantActions, "|") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantActions, "\n"))
	}
}
