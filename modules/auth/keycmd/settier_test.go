package keycmd

import (
	"context"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestKeysCLISetTierAndAudit: set-tier moves only the live keys of the
// organization, and every change made from the command line is in the audit
// log the console shows, as cli:<user>.
func TestKeysCLISetTierAndAudit(t *testing.T) {
	dsn := testenv.Postgres(t)
	c := cli{t, dsn}
	c.must("migrate")
	idA, _ := issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "live"))
	idB, _ := issuedKey(t, c.must("issue", "--org", "acme", "--tier", "free", "--env", "test"))
	c.must("revoke", idB)
	idC, _ := issuedKey(t, c.must("issue", "--org", "other", "--tier", "free", "--env", "live"))
	if out := c.must("set-tier", "--org", "acme", "--tier", "enterprise"); !strings.Contains(out, "1 live key(s) moved to tier enterprise") {
		t.Fatalf("set-tier said %q", out)
	}
	pool := newPool(t, dsn)
	tiers := map[string]string{}
	keys, err := keystore.List(context.Background(), pool, keystore.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		tiers[k.ID] = k.Tier
	}
	if tiers[idA] != "enterprise" || tiers[idB] != "free" || tiers[idC] != "free" {
		t.Fatalf("tiers after set-tier: %v (want only %s moved)", tiers, idA)
	}
	if code, _, errs := c.run("set-tier", "--org", "acme"); code != 2 || !strings.Contains(errs, "set-tier needs --org and --tier") {
		t.Fatalf("set-tier without --tier: exit %d %q", code, errs)
	}
	if code, _, errs := c.run("set-tier", "--org", "nobody", "--tier", "free"); code != 1 || !strings.Contains(errs, "no such organization") {
		t.Fatalf("set-tier of an unknown organization: exit %d %q", code, errs)
	}
	entries, _, err := keystore.ListAudit(context.Background(), pool, keystore.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Actor, "cli:") || e.Role != keystore.RoleOperator {
			t.Errorf("entry %+v is not the command line's", e)
		}
		actions = append(actions, e.Action+" "+e.Org+" "+e.Target)
	}
	// Key actions name the key id, organization actions the organization, as
	// the console's entries do.
	want := []string{"org.set_tier acme acme", "key.issue other " + idC, "key.revoke acme " + idB, "key.issue acme " + idB, "key.issue acme " + idA}
	if strings.Join(actions, "|") != strings.Join(want, "|") {
		t.Fatalf("audit log:\n%s\nwant\n%s", strings.Join(actions, "\n"), strings.Join(want, "\n"))
	}
}
