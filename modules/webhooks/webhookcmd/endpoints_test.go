package webhookcmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestEndpointsListAndDelete: the CLI lists an organization's endpoints
// (named as `civicgate keys` names it) with their state, an unusable one with
// its reason, never another organization's; it deletes one with its
// deliveries, and refuses an unknown organization or another's endpoint.
func TestEndpointsListAndDelete(t *testing.T) {
	db := feedtest.New(t)
	ctx := context.Background()
	acme, other := db.NewOrg(t, "acme", "paid"), db.NewOrg(t, "other", "paid")
	s := store.New(db.Pool, mustBox(t, oldMaterial))
	create := func(org feedtest.Org, url string, fams ...string) store.Endpoint {
		ep, _, err := s.CreateEndpoint(ctx, time.Now(), store.EndpointSpec{Org: org.ID, URL: url, Families: fams}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	a1 := create(acme, "https://a.example.org/one", "bills", "members")
	a2 := create(acme, "https://a.example.org/two", "bills")
	o1 := create(other, "https://o.example.org/", "bills")
	if _, err := db.Pool.Exec(ctx, `UPDATE civicgate.webhook_endpoints SET status = 'unusable', unusable_reason = $2 WHERE id = $1`,
		a2.ID, store.ReasonSecret); err != nil {
		t.Fatal(err)
	}
	db.Insert(t, "bills", 2)
	if _, err := s.FanOut(ctx, time.Now(), 100, feedtest.Tiers()); err != nil {
		t.Fatal(err)
	}

	for _, org := range []string{"acme", acme.ID} {
		code, stdout, stderr := run(t, db.DSN, nil, "endpoints", "list", "--org", org)
		if code != 0 {
			t.Fatalf("list %s: exit %d %q", org, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "STATE") {
			t.Fatalf("list %s:\n%s", org, stdout)
		}
		if !strings.Contains(lines[1], a1.ID) || !strings.Contains(lines[1], "https://a.example.org/one") ||
			!strings.Contains(lines[1], "bills,members") || !strings.Contains(lines[1], "active") ||
			!strings.Contains(lines[1], a1.CreatedAt.Format(time.RFC3339)) {
			t.Fatalf("row %q", lines[1])
		}
		if !strings.Contains(lines[2], a2.ID) || !strings.Contains(lines[2], "unusable ("+store.ReasonSecret+")") {
			t.Fatalf("row %q", lines[2])
		}
		if strings.Contains(stdout, o1.ID) || strings.Contains(stdout, "whsec_") {
			t.Fatalf("another organization's endpoint or a secret listed:\n%s", stdout)
		}
	}

	if code, _, stderr := run(t, db.DSN, nil, "endpoints", "delete", "--org", "acme", "--id", o1.ID); code != 1 ||
		!strings.Contains(stderr, `organization "acme" has no endpoint "`+o1.ID+`"`) {
		t.Fatalf("deleted another organization's endpoint: exit %d %q", code, stderr)
	}
	if code, stdout, stderr := run(t, db.DSN, nil, "endpoints", "delete", "--org", "acme", "--id", a1.ID); code != 0 ||
		!strings.Contains(stdout, "deleted endpoint "+a1.ID) {
		t.Fatalf("delete: exit %d %q %q", code, stdout, stderr)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, a1.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d deliveries left: %v", left, err)
	}
	if code, stdout, _ := run(t, db.DSN, nil, "endpoints", "list", "--org", "acme"); code != 0 || strings.Contains(stdout, a1.ID) {
		t.Fatalf("still listed:\n%s", stdout)
	}
	if code, _, stderr := run(t, db.DSN, nil, "endpoints", "delete", "--org", "acme", "--id", a1.ID); code != 1 || !strings.Contains(stderr, "has no endpoint") {
		t.Fatalf("second delete: exit %d %q", code, stderr)
	}
	if code, _, stderr := run(t, db.DSN, nil, "endpoints", "list", "--org", "nobody"); code != 1 || !strings.Contains(stderr, `no organization "nobody"`) {
		t.Fatalf("unknown organization: exit %d %q", code, stderr)
	}
}
