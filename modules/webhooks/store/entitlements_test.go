package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestAuthChannelIsTheKeyStores: the copied channel name is the key store's.
func TestAuthChannelIsTheKeyStores(t *testing.T) {
	if store.AuthChannel != keystore.Channel {
		t.Fatalf("store.AuthChannel %q, keystore.Channel %q", store.AuthChannel, keystore.Channel)
	}
}

// statuses returns endpoint's deliveries as "family:status:last_error", by id.
func statuses(t *testing.T, db *feedtest.DB, endpoint string) map[string]int {
	t.Helper()
	rows, err := db.Pool.Query(ctxT(t), `SELECT coalesce(family, '') || ':' || status || ':' || last_error
		FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out[s]++
	}
	return out
}

func endpointFor(t *testing.T, s *store.Store, org feedtest.Org, env string, families ...string) store.Endpoint {
	t.Helper()
	ep, _, err := s.CreateEndpoint(ctxT(t), time.Now(), store.EndpointSpec{Org: org.ID, Env: env, URL: "https://example.org/" + org.Name,
		Families: families}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func fanOut(t *testing.T, s *store.Store, now time.Time) {
	t.Helper()
	if _, err := s.FanOut(ctxT(t), now, 1000, feedtest.Tiers()); err != nil {
		t.Fatal(err)
	}
}

func reconcile(t *testing.T, s *store.Store, now time.Time) store.Reconciled {
	t.Helper()
	r, err := s.Reconcile(ctxT(t), now, feedtest.Tiers())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFanOutClaimAndReconcileHonourTheKeyStore: suspension, resumption and a
// downgrade as the key store records them reach the outbox: a suspended
// organization gets no new deliveries and its pending ones are parked (by
// Claim and by Reconcile) and never claimed, a resumed one's come back, and
// a family the organization lost is cancelled and no longer fanned out. The
// endpoint's environment counts: a paid key in another environment entitles
// nothing. Another organization is served throughout (so a refusal can be
// told from an engine that does nothing).
func TestFanOutClaimAndReconcileHonourTheKeyStore(t *testing.T) {
	db, s := newStore(t)
	now := time.Now()
	a, b := db.NewOrg(t, "a", "paid"), db.NewOrg(t, "b", "paid")
	epA := endpointFor(t, s, a, "live", "bills", "lobbying_disclosures")
	epB := endpointFor(t, s, b, "live", "bills", "lobbying_disclosures")
	claim := func() map[string]int {
		t.Helper()
		jobs, err := s.Claim(ctxT(t), now, claimParams(100, 100), store.RenderEnvelope)
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]int{}
		for _, j := range jobs {
			by[j.EndpointID]++
			if err := s.Finish(ctxT(t), now, j, store.Outcome{Status: "pending", NextAt: now, StatusCode: 503, Error: "status 503"}); err != nil {
				t.Fatal(err)
			}
		}
		return by
	}

	// Suspended: no new deliveries for a; b gets both families.
	db.SetStatus(t, a, keystore.OrgSuspended)
	db.Insert(t, "bills", 2)
	db.Insert(t, "lobbying_disclosures", 1)
	fanOut(t, s, now)
	if got := statuses(t, db, epA.ID); len(got) != 0 {
		t.Fatalf("suspended organization fanned out: %v", got)
	}
	if got := statuses(t, db, epB.ID); got["bills:pending:"] != 2 || got["lobbying_disclosures:pending:"] != 1 {
		t.Fatalf("b: %v", got)
	}

	// Active again: a's new events are fanned out; suspended again, Claim
	// parks them instead of claiming them, and claims b's.
	db.SetStatus(t, a, keystore.OrgActive)
	db.Insert(t, "bills", 3)
	fanOut(t, s, now)
	db.SetStatus(t, a, keystore.OrgSuspended)
	if by := claim(); by[epA.ID] != 0 || by[epB.ID] != 6 {
		t.Fatalf("claimed %v: none of a's, all 6 of b's", by)
	}
	if got := statuses(t, db, epA.ID); got["bills:parked:organization suspended"] != 3 || len(got) != 1 {
		t.Fatalf("a while suspended: %v", got)
	}
	if r := reconcile(t, s, now); r.Resumed != 0 || r.Cancelled != 0 {
		t.Fatalf("reconcile while suspended: %+v", r)
	}
	if by := claim(); by[epA.ID] != 0 {
		t.Fatalf("claimed a parked delivery: %v", by)
	}

	// Resumed: Reconcile puts them back, Claim takes them.
	db.SetStatus(t, a, keystore.OrgActive)
	if r := reconcile(t, s, now); r.Resumed != 3 {
		t.Fatalf("reconcile after resuming: %+v", r)
	}
	if by := claim(); by[epA.ID] != 3 {
		t.Fatalf("after resuming claimed %v", by)
	}

	// Downgraded (paid key revoked, a free one issued): pending lobbying
	// deliveries are cancelled, bills stay, new lobbying events are not fanned
	// out. A paid key in the test environment does not entitle the live endpoint.
	db.Insert(t, "lobbying_disclosures", 2)
	fanOut(t, s, now)
	db.Issue(t, a, "free")
	db.Revoke(t, a.KeyID)
	ctx := ctxT(t)
	if _, err := keystore.Issue(ctx, db.Pool, a.Name, "paid", "test"); err != nil {
		t.Fatal(err)
	}
	if r := reconcile(t, s, now); r.Cancelled != 2 {
		t.Fatalf("reconcile after the downgrade: %+v", r)
	}
	db.Insert(t, "lobbying_disclosures", 1)
	db.Insert(t, "bills", 1)
	fanOut(t, s, now)
	got := statuses(t, db, epA.ID)
	if got["lobbying_disclosures:cancelled:not entitled to family lobbying_disclosures"] != 2 || got["bills:pending:status 503"] != 3 ||
		got["bills:pending:"] != 1 || len(got) != 3 {
		t.Fatalf("a after the downgrade: %v", got)
	}
	if by := claim(); by[epA.ID] != 4 {
		t.Fatalf("after the downgrade claimed %v, want a's 4 bills", by)
	}
	// An endpoint registered without an environment counts every environment's keys.
	epAny := endpointFor(t, s, a, "", "lobbying_disclosures")
	db.Insert(t, "lobbying_disclosures", 1)
	fanOut(t, s, now)
	if got := statuses(t, db, epAny.ID); got["lobbying_disclosures:pending:"] != 1 {
		t.Fatalf("endpoint without an environment: %v", got)
	}
	lobbyingB := 0
	for k, n := range statuses(t, db, epB.ID) {
		if strings.HasPrefix(k, "lobbying_disclosures:pending:") {
			lobbyingB += n
		}
	}
	if lobbyingB != 5 {
		t.Fatalf("b has %d lobbying deliveries pending, want all 5", lobbyingB)
	}
}

// TestClaimInterleavesOrganizationsAndBoundsEach: an organization with a large
// backlog of older deliveries (on several endpoints) does not take every
// claimed slot: organizations are served round-robin (least busy first), and
// none has more than MaxInFlightPerOrg attempts in flight across claims.
func TestClaimInterleavesOrganizationsAndBoundsEach(t *testing.T) {
	db, s := newStore(t)
	now := time.Now()
	big, small := db.NewOrg(t, "big", "paid"), db.NewOrg(t, "small", "paid")
	var bigEPs []string
	for range 3 {
		bigEPs = append(bigEPs, endpointFor(t, s, big, "live", "members").ID)
	}
	db.Insert(t, "members", 20) // 60 deliveries of big, all older
	fanOut(t, s, now)
	smallEP := endpointFor(t, s, small, "live", "bills").ID
	db.Insert(t, "bills", 3)
	fanOut(t, s, now.Add(time.Second))
	later := now.Add(time.Minute)
	p := store.ClaimParams{Lease: time.Hour, MaxInFlight: 10, MaxInFlightPerOrg: 4, Limit: 4, Tiers: feedtest.Tiers()}
	count := func(jobs []store.Job) (b, sm int) {
		for _, j := range jobs {
			if j.EndpointID == smallEP {
				sm++
			} else {
				b++
			}
		}
		return b, sm
	}
	jobs, err := s.Claim(context.Background(), later, p, store.RenderEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	if b, sm := count(jobs); b != 2 || sm != 2 {
		t.Fatalf("first claim: big %d, small %d; want 2 and 2 (interleaved)", b, sm)
	}
	// Big has 2 in flight, small 2: the next 4 slots go 1 to small (its last)
	// and 2 to big (up to its bound of 4), 1 left unused.
	p.Limit = 10
	jobs, err = s.Claim(context.Background(), later, p, store.RenderEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	if b, sm := count(jobs); b != 2 || sm != 1 {
		t.Fatalf("second claim: big %d, small %d; want 2 (its bound) and 1", b, sm)
	}
	if jobs, err = s.Claim(context.Background(), later, p, store.RenderEnvelope); err != nil || len(jobs) != 0 {
		t.Fatalf("third claim: %d %v; big is at its bound", len(jobs), err)
	}
	var inflight int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM civicgate.webhook_deliveries
		WHERE endpoint_id = ANY($1) AND status = 'delivering'`, bigEPs).Scan(&inflight); err != nil || inflight != 4 {
		t.Fatalf("big in flight %d %v", inflight, err)
	}
}

// TestRotatingKeyKeepsDeliveries: a key inside its rotation overlap is live
// for the gateway, so it is live for deliveries too — an organization whose
// new key is revoked while the old one is still rotating keeps receiving, and
// only once the overlap has passed are its deliveries parked (docs/design.md
// D8 and D15).
func TestRotatingKeyKeepsDeliveries(t *testing.T) {
	db, s := newStore(t)
	now := time.Now()
	a := db.NewOrg(t, "a", "paid")
	ep := endpointFor(t, s, a, "live", "bills")
	rot, err := keystore.Rotate(ctxT(t), db.Pool, keystore.RotateSpec{Org: a.Name, Env: "live", Overlap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	db.Revoke(t, rot.ID) // the new key; the old one is rotating for an hour
	db.Insert(t, "bills", 2)
	fanOut(t, s, now)
	if got := statuses(t, db, ep.ID); got["bills:pending:"] != 2 || len(got) != 1 {
		t.Fatalf("with the old key inside its overlap: %v, want 2 pending", got)
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE civicgate.api_keys SET rotates_out_at = now() - interval '1 second'
		WHERE org_id = $1 AND status = 'rotating'`, a.ID); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Claim(ctxT(t), now, claimParams(100, 100), store.RenderEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Fatalf("claimed %d deliveries for an organization whose last key's overlap is over", len(jobs))
	}
	if got := statuses(t, db, ep.ID); got["bills:parked:"+store.ReasonNoKey] != 2 {
		t.Fatalf("after the overlap: %v, want both parked for want of a key", got)
	}
}
