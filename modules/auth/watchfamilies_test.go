package auth

import (
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// familyTiers are two tiers with different families, and a third with the
// free tier's families under another name.
var familyTiers = map[string]TierConfig{
	"free":     {Rate: "30/m", Families: []string{"bills"}},
	"freebies": {Rate: "60/m", Families: []string{"bills"}},
	"pro":      {Rate: "300/m", Families: []string{"bills", "votes"}},
}

// entitlementWatch starts a watch of key and returns it as the
// contract.EntitlementWatch civic_mcp's listen streams type-assert.
func entitlementWatch(t *testing.T, a *App, key string) (contract.CredentialWatch, contract.EntitlementWatch) {
	t.Helper()
	w := watchKey(t, a, key)
	ew, ok := w.(contract.EntitlementWatch)
	if !ok {
		t.Fatalf("a key's watch %T is no contract.EntitlementWatch", w)
	}
	return w, ew
}

// awaitChanged waits for ew's Changed signal and checks the families it
// then reports; it returns how long the signal took from since.
func awaitChanged(t *testing.T, ew contract.EntitlementWatch, want string, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	select {
	case <-ew.Changed():
	case <-time.After(within):
		t.Fatalf("no change of families signalled within %s (families %q, want %q)", within, ew.Families(), want)
	}
	took := time.Since(since)
	if got := ew.Families(); got != want {
		t.Fatalf("Families %q after the signal, want %q", got, want)
	}
	return took
}

// awaitRoundsSince waits until the app has finished its target-th recheck
// round (target read before the change, so a round that ends before the
// wait starts still counts).
func awaitRoundsSince(t *testing.T, a *App, target int64, within time.Duration) {
	t.Helper()
	testenv.EventuallyTrue(t, within, "the notification's recheck round", func() bool {
		return a.watches.rounds.Load() >= target
	})
}

func expectUnchanged(t *testing.T, ew contract.EntitlementWatch, want string) {
	t.Helper()
	select {
	case <-ew.Changed():
		t.Fatalf("change of families signalled, Families %q, want none (%q)", ew.Families(), want)
	default:
	}
	if got := ew.Families(); got != want {
		t.Fatalf("Families %q, want %q", got, want)
	}
}

// TestWatchSignalsTierChange: `civicgate keys set-tier` on the store reaches
// the open watches of the organization's keys through NOTIFY org: (the
// fallback interval is a minute, so only the notification can do it) as a
// change of families, without ending them (docs/design.md D80); a grant (the
// record changes, the families do not), a tier with the same families, and
// another organization's change signal nothing.
func TestWatchSignalsTierChange(t *testing.T) {
	dsn, pool := migratedDB(t)
	a := provisionWatchAppTiers(t, dsn, time.Minute, familyTiers)
	startApp(t, a)
	awaitListening(t, a)
	k1 := issue(t, pool, "tiered", "free", "live")
	k2 := issue(t, pool, "tiered", "free", "live")
	other := issue(t, pool, "bystander", "free", "live")
	w1, e1 := entitlementWatch(t, a, k1.Key)
	w1b, e1b := entitlementWatch(t, a, k1.Key)
	w2, e2 := entitlementWatch(t, a, k2.Key)
	wo, eo := entitlementWatch(t, a, other.Key)
	for _, ew := range []contract.EntitlementWatch{e1, e1b, e2, eo} {
		expectUnchanged(t, ew, "bills")
	}

	t.Run("grant signals nothing", func(t *testing.T) {
		rounds := a.watches.rounds.Load()
		keysCLI(t, dsn, "grant", "tiered", "--requests", "1000", "--until", "1d")
		awaitRoundsSince(t, a, rounds+1, notifyWithin) // the NOTIFY org: recheck
		for _, ew := range []contract.EntitlementWatch{e1, e1b, e2} {
			expectUnchanged(t, ew, "bills")
		}
	})
	t.Run("same families signal nothing", func(t *testing.T) {
		rounds := a.watches.rounds.Load()
		keysCLI(t, dsn, "set-tier", "--org", "tiered", "--tier", "freebies")
		awaitRoundsSince(t, a, rounds+1, notifyWithin) // the NOTIFY org: recheck
		for _, ew := range []contract.EntitlementWatch{e1, e1b, e2} {
			expectUnchanged(t, ew, "bills")
		}
	})
	t.Run("tier change signals the new families", func(t *testing.T) {
		start := time.Now()
		keysCLI(t, dsn, "set-tier", "--org", "tiered", "--tier", "pro")
		for _, ew := range []contract.EntitlementWatch{e1, e1b, e2} {
			took := awaitChanged(t, ew, "bills,votes", start, notifyWithin)
			t.Logf("signalled %s after set-tier", took.Round(time.Millisecond))
		}
		keysCLI(t, dsn, "set-tier", "--org", "tiered", "--tier", "free")
		for _, ew := range []contract.EntitlementWatch{e1, e1b, e2} {
			awaitChanged(t, ew, "bills", start, notifyWithin)
		}
	})
	for _, w := range []contract.CredentialWatch{w1, w1b, w2, wo} {
		expectOpen(t, w)
	}
	expectUnchanged(t, eo, "bills")
}

// TestWatchTierChangeByTick: without a notification (the change written
// past the store's NOTIFY), the fallback recheck signals the change of
// families within its interval.
func TestWatchTierChangeByTick(t *testing.T) {
	dsn, pool := migratedDB(t)
	a := provisionWatchAppTiers(t, dsn, 200*time.Millisecond, familyTiers)
	startApp(t, a)
	k := issue(t, pool, "ticked", "free", "live")
	w, ew := entitlementWatch(t, a, k.Key)
	start := time.Now()
	if _, err := pool.Exec(t.Context(), `UPDATE civicgate.api_keys SET tier = 'pro' WHERE id = $1`, k.ID); err != nil {
		t.Fatal(err)
	}
	took := awaitChanged(t, ew, "bills,votes", start, 20*time.Second)
	t.Logf("signalled %s after the update, interval 200ms", took.Round(time.Millisecond))
	expectOpen(t, w)
}
