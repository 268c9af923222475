package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

var otherMaterial = []byte("another checkout's key material, 32+ bytes")

func box(t *testing.T, materials ...[]byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(materials...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// poison re-seals endpoint id's secret with another key, as a second
// checkout sharing the database did.
func poison(t *testing.T, db *feedtest.DB, id string) {
	t.Helper()
	sealed, err := box(t, otherMaterial).Seal([]byte("whsec_AAAA"), []byte(id))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE civicgate.webhook_endpoints SET secret_sealed = $2 WHERE id = $1`, id, sealed); err != nil {
		t.Fatal(err)
	}
}

func endpointRow(t *testing.T, db *feedtest.DB, id string) (status, reason string) {
	t.Helper()
	if err := db.Pool.QueryRow(ctxT(t), `SELECT status, unusable_reason FROM civicgate.webhook_endpoints WHERE id = $1`, id).
		Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	return status, reason
}

// TestClaimSetsAsideAnEndpointWhoseSecretCannotBeOpened: one endpoint sealed
// with another key among healthy ones of two organizations. The claim that
// meets it fails its deliveries with the reason (no attempt counted), marks
// it unusable, reports it once, and claims every healthy endpoint's
// deliveries in the same call; before, the whole claim failed for everyone.
func TestClaimSetsAsideAnEndpointWhoseSecretCannotBeOpened(t *testing.T) {
	db, s := newStore(t)
	a, b := db.NewOrg(t, "a", "paid"), db.NewOrg(t, "b", "paid")
	healthyA := endpointFor(t, s, a, "live", "bills")
	poisoned := endpointFor(t, s, a, "live", "bills")
	healthyB := endpointFor(t, s, b, "live", "bills")
	poison(t, db, poisoned.ID)
	db.Insert(t, "bills", 3)
	now := time.Now()
	fanOut(t, s, now)

	// A process started after the row was poisoned (its key check is later).
	claimer := store.New(db.Pool, box(t, []byte("0123456789abcdef0123456789abcdef")))
	var reported []store.SetAside
	p := claimParams(10, 100)
	p.SetAside = func(u store.SetAside) { reported = append(reported, u) }
	jobs, err := claimer.Claim(ctxT(t), now, p, store.RenderEnvelope)
	if err != nil {
		t.Fatalf("claim failed for everyone: %v", err)
	}
	per := map[string]int{}
	for _, j := range jobs {
		per[j.EndpointID]++
		if len(j.Keys) != 1 || j.Body == nil {
			t.Fatalf("job %+v without keys or body", j)
		}
	}
	if per[healthyA.ID] != 3 || per[healthyB.ID] != 3 || per[poisoned.ID] != 0 || len(jobs) != 6 {
		t.Fatalf("claimed per endpoint: %v", per)
	}
	if len(reported) != 1 || reported[0].EndpointID != poisoned.ID || reported[0].Kind != store.KindSecret ||
		reported[0].Failed != 3 || !reported[0].Marked || reported[0].Deferred {
		t.Fatalf("reported %+v", reported)
	}
	if st := statuses(t, db, poisoned.ID); st["bills:failed:"+store.ReasonSecret] != 3 || len(st) != 1 {
		t.Fatalf("poisoned deliveries: %v", st)
	}
	var attempts int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT sum(attempts) FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`,
		poisoned.ID).Scan(&attempts); err != nil || attempts != 0 {
		t.Fatalf("attempts counted for deliveries never sent: %d %v", attempts, err)
	}
	if st, reason := endpointRow(t, db, poisoned.ID); st != store.StatusUnusable || reason != store.ReasonSecret {
		t.Fatalf("endpoint %s %q", st, reason)
	}

	// The API's views: the endpoint's state and the deliveries' reason.
	ep, err := s.GetEndpoint(ctxT(t), a.ID, poisoned.ID)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(ep)
	if !strings.Contains(string(js), `"status":"unusable","unusable_reason":"`+store.ReasonSecret+`"`) {
		t.Fatalf("endpoint JSON %s", js)
	}
	ds, _, err := s.Deliveries(ctxT(t), a.ID, poisoned.ID, 0, 10)
	if err != nil || len(ds) != 3 || ds[0].Status != "failed" || ds[0].LastError == nil || *ds[0].LastError != store.ReasonSecret {
		t.Fatalf("deliveries %+v %v", ds, err)
	}

	// Nothing more is fanned out to it; the others go on.
	db.Insert(t, "bills", 1)
	fanOut(t, s, now)
	if st := statuses(t, db, poisoned.ID); st["bills:failed:"+store.ReasonSecret] != 3 || len(st) != 1 {
		t.Fatalf("fanned out to an unusable endpoint: %v", st)
	}
	if jobs, err := claimer.Claim(ctxT(t), now, p, store.RenderEnvelope); err != nil || len(jobs) != 2 {
		t.Fatalf("next claim: %d jobs, %v", len(jobs), err)
	}

	// Rotating its secret is the way out: a fresh secret, the unreadable one
	// not kept as the previous, the endpoint active again.
	if _, err := s.RotateSecret(ctxT(t), now, a.ID, poisoned.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	var prevNull bool
	if err := db.Pool.QueryRow(ctxT(t), `SELECT prev_secret_sealed IS NULL FROM civicgate.webhook_endpoints WHERE id = $1`,
		poisoned.ID).Scan(&prevNull); err != nil || !prevNull {
		t.Fatalf("unreadable secret kept as the previous one: %v", err)
	}
	if st, reason := endpointRow(t, db, poisoned.ID); st != store.StatusActive || reason != "" {
		t.Fatalf("after rotation: %s %q", st, reason)
	}
}

// TestSecretSealedAfterTheKeyCheckIsDeferredNotSetAside: a secret written
// after this process checked its key may be sealed with a newer key (a
// rotation under way): its deliveries wait a minute, the endpoint stays.
func TestSecretSealedAfterTheKeyCheckIsDeferredNotSetAside(t *testing.T) {
	db, s := newStore(t)
	org := db.NewOrg(t, "a", "paid")
	if err := s.CheckKey(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ep := endpointFor(t, s, org, "live", "bills")
	sealed, err := box(t, otherMaterial).Seal([]byte("whsec_AAAA"), []byte(ep.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE civicgate.webhook_endpoints SET secret_sealed = $2, sealed_at = clock_timestamp() WHERE id = $1`,
		ep.ID, sealed); err != nil {
		t.Fatal(err)
	}
	db.Insert(t, "bills", 2)
	now := time.Now()
	fanOut(t, s, now)
	var reported []store.SetAside
	p := claimParams(10, 100)
	p.SetAside = func(u store.SetAside) { reported = append(reported, u) }
	jobs, err := s.Claim(ctxT(t), now, p, store.RenderEnvelope)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("%d jobs, %v", len(jobs), err)
	}
	if len(reported) != 1 || !reported[0].Deferred || reported[0].Marked {
		t.Fatalf("reported %+v", reported)
	}
	if st, _ := endpointRow(t, db, ep.ID); st != store.StatusActive {
		t.Fatalf("endpoint %s", st)
	}
	var pending, attempts int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FILTER (WHERE status = 'pending' AND next_attempt_at > $2), sum(attempts)
		FROM civicgate.webhook_deliveries WHERE endpoint_id = $1`, ep.ID, now.Add(50*time.Second)).Scan(&pending, &attempts); err != nil ||
		pending != 2 || attempts != 0 {
		t.Fatalf("deferred: %d pending a minute later, %d attempts, %v", pending, attempts, err)
	}
}

// TestClaimSetsAsideAnEndpointWhoseURLIsNoLongerAllowed: the claimer's egress
// rule refuses a stored URL (a loopback target once development mode is
// off): that endpoint alone is set aside, with the rule's reason kept for
// the log only.
func TestClaimSetsAsideAnEndpointWhoseURLIsNoLongerAllowed(t *testing.T) {
	db, s := newStore(t)
	org := db.NewOrg(t, "a", "paid")
	good := endpointFor(t, s, org, "live", "bills")
	stale := endpointFor(t, s, org, "live", "bills")
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE civicgate.webhook_endpoints SET url = 'http://127.0.0.1:9999/hook' WHERE id = $1`, stale.ID); err != nil {
		t.Fatal(err)
	}
	db.Insert(t, "bills", 2)
	now := time.Now()
	fanOut(t, s, now)
	var reported []store.SetAside
	p := claimParams(10, 100)
	p.CheckURL = func(u string) error {
		if strings.HasPrefix(u, "http://127.0.0.1") {
			return errors.New("loopback address 127.0.0.1:9999")
		}
		return nil
	}
	p.SetAside = func(u store.SetAside) { reported = append(reported, u) }
	jobs, err := s.Claim(ctxT(t), now, p, store.RenderEnvelope)
	if err != nil || len(jobs) != 2 || jobs[0].EndpointID != good.ID || jobs[1].EndpointID != good.ID {
		t.Fatalf("%d jobs, %v", len(jobs), err)
	}
	if len(reported) != 1 || reported[0].Kind != store.KindURL || reported[0].Detail != "loopback address 127.0.0.1:9999" {
		t.Fatalf("reported %+v", reported)
	}
	if st := statuses(t, db, stale.ID); st["bills:failed:"+store.ReasonURL] != 2 {
		t.Fatalf("stale URL's deliveries: %v", st)
	}
	// A replay re-enables it; the cause remains, so the next claim sets it aside again.
	if _, err := s.Replay(ctxT(t), now, org.ID, stale.ID, 0, 10, []string{"bills"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := endpointRow(t, db, stale.ID); st != store.StatusActive {
		t.Fatalf("replay left it %s", st)
	}
	reported = nil
	if _, err := s.Claim(ctxT(t), now, p, store.RenderEnvelope); err != nil {
		t.Fatal(err)
	}
	if len(reported) != 1 || !reported[0].Marked || reported[0].Failed != 2 {
		t.Fatalf("after replay: %+v", reported)
	}
}

// TestReconcileSetsAsideTheEndpointsOfADeletedOrganization: an endpoint that
// escaped the key store's deletion (its organization is marked deleted) is
// set aside with its parked deliveries, instead of parked forever.
func TestReconcileSetsAsideTheEndpointsOfADeletedOrganization(t *testing.T) {
	db, s := newStore(t)
	gone, kept := db.NewOrg(t, "gone", "paid"), db.NewOrg(t, "kept", "paid")
	epGone := endpointFor(t, s, gone, "live", "bills")
	epKept := endpointFor(t, s, kept, "live", "bills")
	db.Insert(t, "bills", 2)
	now := time.Now()
	fanOut(t, s, now)
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE civicgate.organizations SET status = 'deleted', deleted_at = now() WHERE id = $1`, gone.ID); err != nil {
		t.Fatal(err)
	}
	r := reconcile(t, s, now)
	if len(r.SetAside) != 1 || r.SetAside[0].EndpointID != epGone.ID || r.SetAside[0].Kind != store.KindOrganization || r.SetAside[0].Failed != 2 {
		t.Fatalf("reconciled %+v", r)
	}
	if st := statuses(t, db, epGone.ID); st["bills:failed:"+store.ReasonOrgDeleted] != 2 {
		t.Fatalf("deleted organization's deliveries: %v", st)
	}
	if r := reconcile(t, s, now); len(r.SetAside) != 0 || r.Changed() {
		t.Fatalf("second reconcile: %+v", r)
	}
	if jobs, err := s.Claim(ctxT(t), now, claimParams(10, 100), store.RenderEnvelope); err != nil || len(jobs) != 2 || jobs[0].EndpointID != epKept.ID {
		t.Fatalf("%d jobs, %v", len(jobs), err)
	}
}
