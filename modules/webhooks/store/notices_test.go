package store_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestNotifyOnce: a notice reaches every active endpoint of its organization
// once, whatever the endpoints' families, with its envelope as the signed
// body; a second call, or several at once, add nothing; an organization
// without an active endpoint gets nothing recorded, so it is notified once
// it has one; Unnotified names the pairs left.
func TestNotifyOnce(t *testing.T) {
	db, s := newStore(t)
	ctx := ctxT(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	a, b, c := db.NewOrg(t, "notice-a", "paid"), db.NewOrg(t, "notice-b", "free"), db.NewOrg(t, "notice-c", "free")
	epA1 := endpointFor(t, s, a, "live", "bills")
	epA2 := endpointFor(t, s, a, "live", "regulatory_filings")
	epB := endpointFor(t, s, b, "live", "members")
	pairs := []store.Notice{{Org: a.ID, Subject: "Bill.title"}, {Org: b.ID, Subject: "Bill.title"}, {Org: c.ID, Subject: "Bill.title"}}
	if got, err := s.Unnotified(ctx, pairs); err != nil || !slices.Equal(got, pairs[:2]) {
		t.Fatalf("unnotified %v %v, want a's and b's (c has no endpoint)", got, err)
	}

	data := map[string]any{"coordinate": "Bill.title", "reason": "Use <b>name</b>"}
	if sent, err := s.Notify(ctx, now, a.ID, "Bill.title", "schema.deprecation_used", data); err != nil || !sent {
		t.Fatalf("first notice: %v %v", sent, err)
	}
	if sent, err := s.Notify(ctx, now, a.ID, "Bill.title", "schema.deprecation_used", data); err != nil || sent {
		t.Fatalf("second notice of the same pair: sent %v %v", sent, err)
	}
	// several sidecars at once: one sends
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sent int
	for range 4 {
		wg.Go(func() {
			ok, err := s.Notify(ctx, now, b.ID, "Bill.title", "schema.deprecation_used", data)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				sent++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if sent != 1 {
		t.Fatalf("4 concurrent notices of one pair: %d sent", sent)
	}
	if ok, err := s.Notify(ctx, now, c.ID, "Bill.title", "schema.deprecation_used", data); err != nil || ok {
		t.Fatalf("an organization without endpoints: sent %v %v", ok, err)
	}
	if got, err := s.Unnotified(ctx, pairs); err != nil || len(got) != 0 {
		t.Fatalf("unnotified after: %v %v", got, err)
	}
	epC := endpointFor(t, s, c, "live", "bills")
	if got, err := s.Unnotified(ctx, pairs); err != nil || !slices.Equal(got, pairs[2:]) {
		t.Fatalf("unnotified once c has an endpoint: %v %v", got, err)
	}
	for ep, want := range map[string]int{epA1.ID: 1, epA2.ID: 1, epB.ID: 1, epC.ID: 0} {
		if got := statuses(t, db, ep); got[":pending:"] != want || len(got) > 1 {
			t.Errorf("endpoint %s: %v, want %d pending notice", ep, got, want)
		}
	}

	// claimed, signed and delivered as an event: the stored envelope is the body
	jobs, err := s.Claim(ctx, now, claimParams(10, 10), store.RenderEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3 notices", len(jobs))
	}
	ids := map[string]bool{}
	for _, j := range jobs {
		var env struct {
			ID         string          `json:"id"`
			Type       string          `json:"type"`
			Cursor     *string         `json:"cursor"`
			OccurredAt time.Time       `json:"occurred_at"`
			Data       json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(j.Body, &env); err != nil {
			t.Fatalf("body %q: %v", j.Body, err)
		}
		if j.Kind != store.KindNotice || len(j.Keys) == 0 || env.ID != j.EventID || env.Type != "schema.deprecation_used" ||
			env.Cursor != nil || !env.OccurredAt.Equal(now) || string(env.Data) != `{"coordinate":"Bill.title","reason":"Use \u003cb\u003ename\u003c/b\u003e"}` {
			t.Errorf("job %+v body %s", j, j.Body)
		}
		ids[j.EventID] = true
	}
	if len(ids) != 2 {
		t.Errorf("webhook-ids %v: want one per notice (a's two endpoints share one)", ids)
	}
}

// TestNoticeOfSuspendedOrganization: a suspended organization's notice is
// parked as its change events are, and goes out when it is active again.
func TestNoticeOfSuspendedOrganization(t *testing.T) {
	db, s := newStore(t)
	ctx := ctxT(t)
	now := time.Now()
	a := db.NewOrg(t, "notice-suspended", "free")
	ep := endpointFor(t, s, a, "live", "bills")
	db.SetStatus(t, a, keystore.OrgSuspended)
	if ok, err := s.Notify(ctx, now, a.ID, "Bill.title", "schema.deprecation_used", map[string]string{}); err != nil || !ok {
		t.Fatalf("notify: %v %v", ok, err)
	}
	if jobs, err := s.Claim(ctx, now, claimParams(10, 10), store.RenderEnvelope); err != nil || len(jobs) != 0 {
		t.Fatalf("claimed while suspended: %d %v", len(jobs), err)
	}
	if got := statuses(t, db, ep.ID); got[":parked:organization suspended"] != 1 {
		t.Fatalf("while suspended: %v", got)
	}
	db.SetStatus(t, a, keystore.OrgActive)
	reconcile(t, s, now)
	jobs, err := s.Claim(ctx, now, claimParams(10, 10), store.RenderEnvelope)
	if err != nil || len(jobs) != 1 || jobs[0].Kind != store.KindNotice {
		t.Fatalf("after resuming: %+v %v", jobs, err)
	}
}
