package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// serviceApp is an App over a fresh database with the production egress
// policy (no loopback) and the tiers of the gateway tests, and the
// civic_webhooks handler over it (as Provision builds them, without Caddy).
func serviceApp(t *testing.T, maxEndpoints, maxReplay int) (*App, *Handler, *feedtest.DB) {
	t.Helper()
	db := feedtest.New(t)
	box, err := secretbox.New([]byte("service-test-sealing-material-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	app := &App{store: store.New(db.Pool, box), overlap: time.Hour, eventFamilies: feedtest.EventFamilies(), Tiers: map[string]TierConfig{
		"free":    {Rate: "30/m", Families: []string{"bills", "members"}},
		"paid":    {Rate: "1000/m", Families: []string{"members", "bills", "regulatory_filings", "changes", "schema_extras"}},
		"gqlonly": {Rate: "30/m", Families: []string{"changes", "schema_extras"}},
	}}
	h := &Handler{Prefix: DefaultPrefix, Org: DefaultOrg, Env: DefaultEnv, Families: DefaultFamilies,
		MaxEndpoints: maxEndpoints, MaxReplay: maxReplay, app: app, logger: zap.NewNop()}
	app.pool = db.Pool
	svc, err := app.Service(maxEndpoints, maxReplay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	h.svc = svc
	return app, h, db
}

// paid is a caller of tier paid: GraphQL-only families included, as
// civic_auth publishes them.
func paid(org string) Caller {
	return Caller{Org: org, Env: "live", Families: []string{"changes", "members", "bills", "regulatory_filings", "schema_extras"}}
}

// serve sends a request for c through the handler, with civic_auth's
// placeholders set.
func serve(h *Handler, c Caller, method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	repl := caddy.NewReplacer()
	repl.Set(contract.CivicOrg, c.Org)
	repl.Set(contract.CivicEnv, c.Env)
	repl.Set(contract.CivicFamilies, strings.Join(c.Families, ","))
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	_ = h.ServeHTTP(w, r, nil)
	return w
}

func ctxMinute(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestTierFamilies(t *testing.T) {
	app := &App{eventFamilies: feedtest.EventFamilies(), Tiers: map[string]TierConfig{
		"paid":    {Families: []string{"lobbying_disclosures", "changes", "bills", "schema_extras"}},
		"gqlonly": {Families: []string{"changes"}},
	}}
	if got := app.TierFamilies("paid"); !slices.Equal(got, []string{"bills", "lobbying_disclosures"}) {
		t.Fatalf("paid: %q", got)
	}
	if got := app.TierFamilies("gqlonly"); got == nil || len(got) != 0 {
		t.Fatalf("a tier without change-event families: %#v, want an empty list", got)
	}
	if got := app.TierFamilies("nope"); got != nil {
		t.Fatalf("unknown tier: %#v, want nil", got)
	}
}

// TestServiceCreate: the rules of registration, each refusal the same error
// (and, through the handler, the same answer) as the HTTP API's.
func TestServiceCreate(t *testing.T) {
	_, h, db := serviceApp(t, 2, 0)
	s, ctx := h.svc, ctxMinute(t)
	org := db.NewOrg(t, "acme", "paid").ID
	c := paid(org)

	// nil families: every change-event family of the caller, in feed order.
	e, secret, err := s.Create(ctx, c, "https://example.org/hook", nil, "ours")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Families, []string{"bills", "members", "regulatory_filings"}) || !strings.HasPrefix(secret, "whsec_") ||
		!strings.HasPrefix(e.ID, "we_") || e.OrgID != org || e.URL != "https://example.org/hook" || e.Description != "ours" || e.Status != "active" {
		t.Fatalf("created %+v %q", e, secret)
	}
	got, err := s.Get(ctx, c, e.ID)
	if err != nil || got.ID != e.ID || !slices.Equal(got.Families, e.Families) {
		t.Fatalf("get %+v %v", got, err)
	}
	// Requested families: duplicates dropped, the request's order kept.
	e2, _, err := s.Create(ctx, c, "https://example.org/other", []string{"members", "bills", "members"}, "")
	if err != nil || !slices.Equal(e2.Families, []string{"members", "bills"}) {
		t.Fatalf("requested families: %+v %v", e2, err)
	}
	if list, err := s.List(ctx, c); err != nil || len(list) != 2 || list[0].ID != e.ID || list[1].ID != e2.ID {
		t.Fatalf("list %+v %v", list, err)
	}

	allFamilies := "bills, members, regulatory_filings, federal_budgets, lobbying_disclosures"
	for _, tc := range []struct {
		name, url, description string
		families               []string
		caller                 Caller
		msg                    string // an *InputError's message; "" = ErrNotEntitled
		body                   string // the request to the HTTP API
	}{
		{"url required", "", "", nil, c, "url is required", `{}`},
		{"egress", "http://169.254.169.254/", "", nil, c, "url: special-purpose address 169.254.169.254", `{"url":"http://169.254.169.254/"}`},
		{"https", "http://example.org/x", "", nil, c, "url: https required", `{"url":"http://example.org/x"}`},
		{"description", "https://example.org", strings.Repeat("x", 1025), nil, c, "description is longer than 1024 bytes",
			`{"url":"https://example.org","description":"` + strings.Repeat("x", 1025) + `"}`},
		{"unknown family", "https://example.org", "", []string{"bills", "nope"}, c, `unknown family "nope" (families: ` + allFamilies + ")",
			`{"url":"https://example.org","families":["bills","nope"]}`},
		{"empty families", "https://example.org", "", []string{}, c, "families must not be empty", `{"url":"https://example.org","families":[]}`},
		{"not entitled", "https://example.org", "", []string{"bills", "federal_budgets"}, c, "",
			`{"url":"https://example.org","families":["bills","federal_budgets"]}`},
		{"GraphQL-only family", "https://example.org", "", []string{"schema_extras"}, c, `unknown family "schema_extras" (families: ` + allFamilies + ")",
			`{"url":"https://example.org","families":["schema_extras"]}`},
		{"no change-event family", "https://example.org", "", nil, Caller{Org: org, Families: []string{"changes"}}, "",
			`{"url":"https://example.org"}`},
		{"too many", "https://example.org", "", nil, c, "an organization may register at most 2 webhook endpoints; delete one first",
			`{"url":"https://example.org"}`},
	} {
		_, _, err := s.Create(ctx, tc.caller, tc.url, tc.families, tc.description)
		var in *InputError
		status, body := http.StatusBadRequest, contract.MessageBodyHTMLEscaped(tc.msg)
		switch {
		case tc.msg == "":
			if !errors.Is(err, ErrNotEntitled) || errors.As(err, &in) {
				t.Fatalf("%s: %v, want ErrNotEntitled", tc.name, err)
			}
			status, body = http.StatusForbidden, contract.BodyNotEntitled
		case !errors.As(err, &in) || in.Message != tc.msg || err.Error() != tc.msg:
			t.Fatalf("%s: %v, want the input error %q", tc.name, err, tc.msg)
		}
		w := serve(h, tc.caller, http.MethodPost, "/v1/webhook-endpoints", tc.body)
		if w.Code != status || w.Body.String() != string(body) {
			t.Fatalf("%s through the API: %d %s, want %d %s", tc.name, w.Code, w.Body, status, body)
		}
	}
	if _, _, err := s.Create(ctx, Caller{Families: c.Families}, "https://example.org", nil, ""); err == nil || errors.As(err, new(*InputError)) {
		t.Fatalf("a caller without an organization: %v", err)
	}
	if list, _ := s.List(ctx, c); len(list) != 2 {
		t.Fatalf("refusals registered endpoints: %d", len(list))
	}
	// The API creates through the same service: the bound counts its endpoints.
	if err := s.Delete(ctx, c, e2.ID); err != nil {
		t.Fatal(err)
	}
	if w := serve(h, c, http.MethodPost, "/v1/webhook-endpoints", `{"url":"https://example.org/api"}`); w.Code != http.StatusCreated {
		t.Fatalf("create through the API: %d %s", w.Code, w.Body)
	}
	if _, _, err := s.Create(ctx, c, "https://example.org", nil, ""); !errors.As(err, new(*InputError)) {
		t.Fatalf("third endpoint: %v", err)
	}
}

// TestServiceOtherOrganization: another organization's endpoint does not
// exist for the caller (store.ErrNotFound, the API's 404, never 403).
func TestServiceOtherOrganization(t *testing.T) {
	_, h, db := serviceApp(t, 0, 0)
	s, ctx := h.svc, ctxMinute(t)
	acme, other := db.NewOrg(t, "acme", "paid").ID, db.NewOrg(t, "other", "paid").ID
	e, _, err := s.Create(ctx, paid(acme), "https://example.org/hook", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{e.ID, "we_nonexistent"} {
		org := other
		if id != e.ID {
			org = acme
		}
		_, errGet := s.Get(ctx, paid(org), id)
		_, _, errRotate := s.RotateSecret(ctx, paid(org), id)
		_, errTest := s.Test(ctx, paid(org), id)
		_, _, errReplay := s.Replay(ctx, paid(org), id, nil)
		_, _, errDeliveries := s.Deliveries(ctx, paid(org), id, 0, 10)
		errDelete := s.Delete(ctx, paid(org), id)
		for name, err := range map[string]error{"Get": errGet, "RotateSecret": errRotate, "Test": errTest, "Replay": errReplay,
			"Deliveries": errDeliveries, "Delete": errDelete} {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s of %s by %s: %v, want store.ErrNotFound", name, id, org, err)
			}
		}
	}
	if list, err := s.List(ctx, paid(other)); err != nil || len(list) != 0 {
		t.Fatalf("other's list %+v %v", list, err)
	}
	if _, err := s.Get(ctx, paid(acme), e.ID); err != nil {
		t.Fatalf("the owner's endpoint after the other's attempts: %v", err)
	}
	w := serve(h, paid(other), http.MethodPost, "/v1/webhook-endpoints/"+e.ID+"/rotate-secret", "")
	if w.Code != http.StatusNotFound || w.Body.String() != string(contract.BodyNotFound) {
		t.Fatalf("rotate through the API: %d %s", w.Code, w.Body)
	}
}

// TestServiceSecretTestReplay: rotation, the test ping and replays.
func TestServiceSecretTestReplay(t *testing.T) {
	app, h, db := serviceApp(t, 0, 2)
	s, ctx := h.svc, ctxMinute(t)
	org := db.NewOrg(t, "acme", "paid").ID
	c := paid(org)
	e, secret, err := s.Create(ctx, c, "https://example.org/hook", []string{"bills", "members"}, "")
	if err != nil {
		t.Fatal(err)
	}

	before := time.Now()
	rotated, expires, err := s.RotateSecret(ctx, c, e.ID)
	if err != nil || !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Fatalf("rotate: %q %v (old %q)", rotated, err, secret)
	}
	if expires.Location() != time.UTC || expires.Before(before.Add(app.overlap)) || expires.After(time.Now().Add(app.overlap)) {
		t.Fatalf("previous secret expires at %v, want now + %v in UTC", expires, app.overlap)
	}

	eventID, err := s.Test(ctx, c, e.ID)
	if err != nil || eventID == "" {
		t.Fatalf("test: %q %v", eventID, err)
	}
	ds, more, err := s.Deliveries(ctx, c, e.ID, 0, 10)
	if err != nil || more || len(ds) != 1 || ds[0].EventID != eventID || ds[0].Kind != "test" || ds[0].Status != "pending" {
		t.Fatalf("deliveries after the ping: %+v %v %v", ds, more, err)
	}
	var payload []byte
	if err := db.Pool.QueryRow(ctx, `SELECT payload FROM civicgate.webhook_deliveries WHERE event_id = $1`, eventID).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(payload), `"type":"ping"`) || !strings.Contains(string(payload), `"endpoint_id":"`+e.ID+`"`) {
		t.Fatalf("ping payload %s", payload)
	}
	// A cursor past 2^31 (ids are bigserial) is a page like any other; it
	// was once compared as a 32-bit integer and answered 500.
	if ds, _, err := s.Deliveries(ctx, c, e.ID, 3_000_000_000, 10); err != nil || len(ds) != 1 {
		t.Fatalf("deliveries before id 3e9: %+v %v", ds, err)
	}
	for _, limit := range []int{0, MaxLimit + 1} {
		if _, _, err := s.Deliveries(ctx, c, e.ID, 0, limit); !errors.As(err, new(*InputError)) ||
			err.Error() != "limit must be an integer from 1 to 100" {
			t.Fatalf("limit %d: %v", limit, err)
		}
	}

	// Replays: from the registration, at most maxReplay (2) at a time, only
	// the endpoint's families the caller is still entitled to.
	db.Insert(t, "bills", 2)
	db.Insert(t, "federal_budgets", 1)
	db.Insert(t, "members", 1)
	n, next, err := s.Replay(ctx, c, e.ID, nil)
	if err != nil || n != 2 || next == nil {
		t.Fatalf("replay 1: %d %v %v", n, next, err)
	}
	if n, next, err = s.Replay(ctx, c, e.ID, next); err != nil || n != 1 || next != nil {
		t.Fatalf("replay 2: %d %v %v", n, next, err)
	}
	free := Caller{Org: org, Env: "live", Families: []string{"changes", "members"}} // bills no longer entitled
	if n, next, err = s.Replay(ctx, free, e.ID, nil); err != nil || n != 1 || next != nil {
		t.Fatalf("replay with members only: %d %v %v", n, next, err)
	}
	for _, cur := range []string{"garbage", "bm9wZQ"} {
		_, _, err := s.Replay(ctx, c, e.ID, &cur)
		var in *InputError
		if !errors.As(err, &in) || in.Message != "from_cursor is not a cursor of this feed" {
			t.Fatalf("replay from %q: %v", cur, err)
		}
	}
	w := serve(h, c, http.MethodPost, "/v1/webhook-endpoints/"+e.ID+"/replay", `{"from_cursor":"garbage"}`)
	if w.Code != http.StatusBadRequest || w.Body.String() != string(contract.MessageBodyHTMLEscaped("from_cursor is not a cursor of this feed")) {
		t.Fatalf("replay through the API: %d %s", w.Code, w.Body)
	}

	if err := s.Delete(ctx, c, e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, c, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

// TestEventFamilies: the configured list wins, checked; without one the
// families the tiers name but the feed's own, sorted (docs/design.md D72).
func TestEventFamilies(t *testing.T) {
	tiers := map[string]TierConfig{
		"free": {Families: []string{"members", "bills"}},
		"paid": {Families: []string{"bills", "changes", "dockets"}},
	}
	got, err := eventFamilies(nil, tiers)
	if err != nil || !slices.Equal(got, []string{"bills", "dockets", "members"}) {
		t.Fatalf("derived: %q, %v", got, err)
	}
	got, err = eventFamilies([]string{"members", "bills"}, tiers)
	if err != nil || !slices.Equal(got, []string{"members", "bills"}) {
		t.Fatalf("configured: %q, %v, want the configured order", got, err)
	}
	for _, bad := range [][]string{{"bills", "bills"}, {"changes"}, {"Bills"}, {""}} {
		if _, err := eventFamilies(bad, tiers); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
