package auth

import (
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

const (
	bodyRotated = `{"error":"API key rotated out"}`
	bodyRevoked = `{"error":"API key revoked"}`
)

// TestRotationOverlapGateway (through Caddy, PostgreSQL): after `keys rotate
// --overlap` the old key keeps working beside the new one; when the overlap
// ends it answers 401 "API key rotated out" with nobody running a command —
// the cache TTL is a minute, so the gateway compares the deadline with its
// clock rather than waiting for a refresh. A deleted organization's keys
// answer 401 "API key revoked".
func TestRotationOverlapGateway(t *testing.T) {
	dsn, pool := migratedDB(t)
	g := startGateway(t, dsn, "1m")
	echo := g.base + "/echo"
	bearer := func(k string) []string { return []string{"Authorization", "Bearer " + k} }

	long := issue(t, pool, "long", "free", "live")
	short := issue(t, pool, "short", "free", "live")
	gone := issue(t, pool, "gone", "free", "live")
	for _, k := range []string{long.Key, short.Key, gone.Key} { // cached for a minute
		if got := get(t, echo, bearer(k)...); got.status != 200 {
			t.Fatalf("before: %d %q", got.status, got.body)
		}
	}

	keysCLI(t, dsn, "rotate", "--org", "long", "--env", "live", "--overlap", "1h")
	if got := get(t, echo, bearer(long.Key)...); got.status != 200 || got.body[:len(long.ID)] != long.ID {
		t.Fatalf("rotating key during its overlap: %d %q", got.status, got.body)
	}

	keysCLI(t, dsn, "rotate", "--org", "short", "--env", "live", "--overlap", "1500ms")
	awaitBody(t, echo, short.Key, bodyRotated, 15*time.Second)
	expectRefusal(t, get(t, echo, bearer(short.Key)...), 401, bodyRotated)
	// The long overlap is still running.
	if got := get(t, echo, bearer(long.Key)...); got.status != 200 {
		t.Fatalf("rotating key after another key's overlap ended: %d %q", got.status, got.body)
	}

	keysCLI(t, dsn, "delete-org", "--org", "gone")
	awaitBody(t, echo, gone.Key, bodyRevoked, notifyWithin)
	expectRefusal(t, get(t, echo, bearer(gone.Key)...), 401, bodyRevoked)
}

// TestWatchClosedAtOverlapEnd: an exchange admitted with a key that is then
// rotated with an overlap stays open while the overlap runs and is closed
// with "API key rotated out" once it ends, by the recheck interval (no
// notification is sent at the deadline); deleting the organization closes
// its exchanges with "API key revoked".
func TestWatchClosedAtOverlapEnd(t *testing.T) {
	dsn, pool := migratedDB(t)
	a := provisionWatchApp(t, dsn, 100*time.Millisecond)
	startApp(t, a)
	awaitListening(t, a)

	long := issue(t, pool, "long", "free", "live")
	lw := watchKey(t, a, long.Key)
	keysCLI(t, dsn, "rotate", "--org", "long", "--env", "live", "--overlap", "1h")

	k := issue(t, pool, "short", "free", "live")
	w := watchKey(t, a, k.Key)
	keysCLI(t, dsn, "rotate", "--org", "short", "--env", "live", "--overlap", "1s")
	awaitFired(t, w, contract.MsgKeyRotated, 15*time.Second)
	// Rounds after the rotations: the rotating key's watch stays open.
	awaitRounds(t, a, 3, 10*time.Second)
	expectOpen(t, lw)

	gone := issue(t, pool, "gone", "free", "live")
	gw := watchKey(t, a, gone.Key)
	keysCLI(t, dsn, "delete-org", "--org", "gone")
	awaitFired(t, gw, contract.MsgKeyRevoked, 20*time.Second)
	expectOpen(t, lw)
}
