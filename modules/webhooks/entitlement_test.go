package webhooks

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// apiRoutes are every route of the handler, with a body where one is read.
func apiRoutes(id string) [][3]string {
	ep := "/v1/webhook-endpoints/" + id
	return [][3]string{
		{http.MethodGet, "/v1/changes", ""},
		{http.MethodGet, "/v1/webhook-endpoints", ""},
		{http.MethodPost, "/v1/webhook-endpoints", `{"url":"https://example.org/new"}`},
		{http.MethodGet, ep, ""},
		{http.MethodGet, ep + "/deliveries", ""},
		{http.MethodPost, ep + "/rotate-secret", ""},
		{http.MethodPost, ep + "/test", ""},
		{http.MethodPost, ep + "/replay", ""},
		{http.MethodDelete, ep, ""},
	}
}

// TestServiceRefusesWithoutTheRoute: the handler alone, with no civic_auth
// require_family in front, refuses a tier without the changes family and a
// suspended organization on every route, with civic_auth's bodies — the
// rules are the Service's (docs/design.md D43), which the console calls too.
func TestServiceRefusesWithoutTheRoute(t *testing.T) {
	_, h, db := serviceApp(t, 0, 0)
	ctx := ctxMinute(t)
	acme := db.NewOrg(t, "acme", "paid")
	e, _, err := h.svc.Create(ctx, paid(acme.ID), "https://example.org/hook", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	free := Caller{Org: acme.ID, Env: "live", Families: []string{"bills", "members"}} // what a free key carries
	for _, rt := range apiRoutes(e.ID) {
		w := serve(h, free, rt[0], rt[1], rt[2])
		if w.Code != http.StatusForbidden || w.Body.String() != string(contract.BodyNotEntitled) {
			t.Errorf("free %s %s: %d %s, want 403 %s", rt[0], rt[1], w.Code, w.Body, contract.BodyNotEntitled)
		}
	}
	if _, _, err := h.svc.Create(ctx, free, "https://example.org/x", nil, ""); !errors.Is(err, ErrNoManageFamily) || !errors.Is(err, ErrNotEntitled) {
		t.Fatalf("create by a free caller: %v, want ErrNoManageFamily (an ErrNotEntitled)", err)
	}

	if err := keystore.SetOrgStatus(ctx, db.Pool, acme.Name, keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	for _, rt := range apiRoutes(e.ID)[1:] { // the feed: civic_auth's check (it reads no organization row)
		w := serve(h, paid(acme.ID), rt[0], rt[1], rt[2])
		if w.Code != http.StatusForbidden || w.Body.String() != string(contract.BodyOrgSuspended) {
			t.Errorf("suspended %s %s: %d %s, want 403 %s", rt[0], rt[1], w.Code, w.Body, contract.BodyOrgSuspended)
		}
	}
	if err := keystore.SetOrgStatus(ctx, db.Pool, acme.Name, keystore.OrgActive); err != nil {
		t.Fatal(err)
	}
	if list, err := h.svc.List(ctx, paid(acme.ID)); err != nil || len(list) != 1 {
		t.Fatalf("after resuming: %+v %v, want the one endpoint (nothing was created or deleted)", list, err)
	}
}

// TestServiceReadOnlyCaller: a read-only caller (a console viewer) reads
// and changes nothing.
func TestServiceReadOnlyCaller(t *testing.T) {
	_, h, db := serviceApp(t, 0, 0)
	s, ctx := h.svc, ctxMinute(t)
	org := db.NewOrg(t, "acme", "paid").ID
	e, _, err := s.Create(ctx, paid(org), "https://example.org/hook", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	viewer := paid(org)
	viewer.ReadOnly = true
	if list, err := s.List(ctx, viewer); err != nil || len(list) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := s.Get(ctx, viewer, e.ID); err != nil {
		t.Fatalf("get: %v", err)
	}
	if _, _, err := s.Deliveries(ctx, viewer, e.ID, 0, 10); err != nil {
		t.Fatalf("deliveries: %v", err)
	}
	_, _, errCreate := s.Create(ctx, viewer, "https://example.org/x", nil, "")
	_, _, errRotate := s.RotateSecret(ctx, viewer, e.ID)
	_, errTest := s.Test(ctx, viewer, e.ID)
	_, _, errReplay := s.Replay(ctx, viewer, e.ID, nil)
	errDelete := s.Delete(ctx, viewer, e.ID)
	for name, err := range map[string]error{"Create": errCreate, "RotateSecret": errRotate, "Test": errTest, "Replay": errReplay, "Delete": errDelete} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s by a read-only caller: %v, want ErrReadOnly", name, err)
		}
	}
}

// TestCallerOf: an organization's caller has the families of the tiers of
// its live keys in the environment, from the app's tier lines.
func TestCallerOf(t *testing.T) {
	_, h, db := serviceApp(t, 0, 0)
	s, ctx := h.svc, ctxMinute(t)
	acme := db.NewOrg(t, "acme", "free")
	c, err := s.CallerOf(ctx, acme.ID, "live")
	if err != nil || c.Org != acme.ID || c.Env != "live" || !slices.Equal(c.Families, []string{"bills", "members"}) || c.ReadOnly {
		t.Fatalf("free: %+v %v", c, err)
	}
	db.Issue(t, acme, "paid")
	if c, err = s.CallerOf(ctx, acme.ID, ""); err != nil || !slices.Contains(c.Families, ManageFamily) || len(c.Families) != 5 {
		t.Fatalf("free and paid: %+v %v", c, err)
	}
	if c, err = s.CallerOf(ctx, acme.ID, "test"); err != nil || len(c.Families) != 0 {
		t.Fatalf("no test key: %+v %v", c, err)
	}
	other := db.NewOrg(t, "other", "gold") // a tier the app does not define: nothing
	if c, err = s.CallerOf(ctx, other.ID, "live"); err != nil || len(c.Families) != 0 {
		t.Fatalf("unknown tier: %+v %v", c, err)
	}
}

// TestSharedLimits: every Service over one App has the same endpoint limit;
// two different values are refused at provision.
func TestSharedLimits(t *testing.T) {
	app, _, _ := serviceApp(t, 0, 0) // its Service set nothing
	console, err := app.Service(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close()
	if n := console.MaxEndpoints(); n != DefaultMaxEndpoints {
		t.Fatalf("nothing set: %d, want %d", n, DefaultMaxEndpoints)
	}
	api, err := app.Service(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := console.MaxEndpoints(); n != 3 {
		t.Fatalf("the console's limit after the API set 3: %d", n)
	}
	if _, err := app.Service(5, 0); err == nil || !strings.Contains(err.Error(), "max_endpoints 5 differs from the 3 set elsewhere") {
		t.Fatalf("a second, different limit: %v", err)
	}
	replay, err := app.Service(0, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	if _, err := app.Service(0, 8); err == nil || !strings.Contains(err.Error(), "max_replay 8 differs from the 7") {
		t.Fatalf("a second, different replay bound: %v", err)
	}
	api.Close()
	api.Close() // idempotent
	again, err := app.Service(3, 0)
	if err != nil {
		t.Fatalf("the same limit again: %v", err)
	}
	again.Close()
}
