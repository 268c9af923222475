package keycmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestKeysCLIGrants: a grant is set, listed (table and JSON), replaced and
// ended from the command line, each change audited as the operator's; bad
// command lines exit 2 and name the flag, an unknown organization or a
// missing grant exits 1.
func TestKeysCLIGrants(t *testing.T) {
	dsn := testenv.Postgres(t)
	c := cli{t, dsn}
	c.must("migrate")
	c.must("issue", "--org", "acme", "--tier", "free", "--env", "live")
	if out := c.must("grant", "acme", "--requests", "100", "--until", "30d"); !strings.Contains(out, "granted requests 100, until ") {
		t.Fatalf("grant said %q", out)
	}
	out := c.must("grant", "acme", "--requests", "200", "--cost", "900000", "--until", "2030-01-01T00:00:00Z")
	if !strings.Contains(out, "granted requests 200, cost 900000, until 2030-01-01T00:00:00Z") {
		t.Fatalf("second grant said %q", out)
	}
	if out := c.must("grants", "list"); !strings.Contains(out, "acme") || !strings.Contains(out, "200") || !strings.Contains(out, "running") {
		t.Fatalf("grants list:\n%s", out)
	}
	var gs []keystore.Grant
	if err := json.Unmarshal([]byte(c.must("grants", "list", "--json")), &gs); err != nil || len(gs) != 1 || gs[0].Requests != 200 || gs[0].Cost != 900000 {
		t.Fatalf("grants list --json: %+v %v", gs, err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"grant", "acme", "--requests", "100"}, "needs --until"},
		{[]string{"grant", "acme", "--until", "1d"}, "needs --until and --requests and/or --cost"},
		{[]string{"grant", "acme", "--requests", "-5", "--until", "1d"}, "whole numbers"},
		{[]string{"grant", "acme", "--requests", "5", "--until", "2001-01-01T00:00:00Z"}, "--until"},
		{[]string{"grant", "acme", "--requests", "5", "--until", "soon"}, "--until"},
		{[]string{"grant", "end", "acme", "--requests", "5"}, "takes no flags"},
		{[]string{"grants", "list", "acme"}, "grants takes list"},
		{[]string{"grant", "acme", "--json", "--requests", "5", "--until", "1d"}, "only for grants list"},
	} {
		if code, _, errs := c.run(bad.args...); code != 2 || !strings.Contains(errs, bad.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", bad.args, code, errs, bad.want)
		}
	}
	if code, _, errs := c.run("grant", "nobody", "--requests", "5", "--until", "1d"); code != 1 || !strings.Contains(errs, "no such organization") {
		t.Fatalf("grant of an unknown organization: exit %d %q", code, errs)
	}
	c.must("grant", "end", "acme")
	if code, _, errs := c.run("grant", "end", "acme"); code != 1 || !strings.Contains(errs, "no grant running") {
		t.Fatalf("grant end twice: exit %d %q", code, errs)
	}
	if out := c.must("grants", "list"); strings.Contains(out, "acme") {
		t.Fatalf("an ended grant is listed without --all:\n%s", out)
	}
	pool := newPool(t, dsn)
	entries, _, err := keystore.ListAudit(context.Background(), pool, keystore.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		if e.Action != "key.issue" {
			actions = append(actions, e.Action+" "+e.Org+" "+e.Detail)
		}
	}
	if len(actions) != 3 || !strings.HasPrefix(actions[0], "org.grant_end acme") ||
		actions[1] != "org.grant acme requests 200, cost 900000, until 2030-01-01T00:00:00Z" || !strings.HasPrefix(actions[2], "org.grant acme requests 100, until ") {
		t.Fatalf("audit log: %q", actions)
	}
}
