package keystore

import (
	"context"
	"errors"
	"testing"
)

func TestAuditPagesNewestFirst(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	is, err := Issue(ctx, pool, "acme", "free", EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := Audit(ctx, pool, AuditEntry{Actor: "a@acme.org", Role: RoleAdmin, OrgID: is.OrgID, Action: "key.issue", Target: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := Audit(ctx, pool, AuditEntry{Actor: "cli:root", Role: RoleOperator, Action: "console.link"}); err != nil {
		t.Fatal(err)
	}
	page, more, err := ListAudit(ctx, pool, AuditQuery{OrgID: is.OrgID, Limit: 3})
	if err != nil || !more || len(page) != 3 || page[0].Target != "e" || page[0].Org != "acme" {
		t.Fatalf("first page: %+v more=%v %v", page, more, err)
	}
	rest, more, err := ListAudit(ctx, pool, AuditQuery{OrgID: is.OrgID, Before: page[2].ID, Limit: 3})
	if err != nil || more || len(rest) != 2 || rest[1].Target != "a" {
		t.Fatalf("second page: %+v more=%v %v", rest, more, err)
	}
	all, _, err := ListAudit(ctx, pool, AuditQuery{})
	if err != nil || len(all) != 6 {
		t.Fatalf("every organization: %d %v", len(all), err)
	}
}

// TestAuditLookups: the key commands find the organization of a change by
// its name or by one of its keys, and say so when there is none.
func TestAuditLookups(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	is, err := Issue(ctx, pool, "acme", "free", EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := OrgIDByName(ctx, pool, "acme"); err != nil || id != is.OrgID {
		t.Errorf("OrgIDByName: %q %v, want %q", id, err, is.OrgID)
	}
	if _, err := OrgIDByName(ctx, pool, "nobody"); !errors.Is(err, ErrNoSuchOrg) {
		t.Errorf("OrgIDByName of an unknown name: %v", err)
	}
	if org, err := KeyOrg(ctx, pool, is.ID); err != nil || org != is.OrgID {
		t.Errorf("KeyOrg: %q %v, want %q", org, err, is.OrgID)
	}
	if _, err := KeyOrg(ctx, pool, "key_nobody"); !errors.Is(err, ErrNoSuchKey) {
		t.Errorf("KeyOrg of an unknown key: %v", err)
	}
	if got := CLIActor(func(string) string { return "ops" }); got != "cli:ops" {
		t.Errorf("CLIActor = %q", got)
	}
}
