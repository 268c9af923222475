package gqlcache

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// changeFeed creates the records backend's change_events table (the columns
// the cache reads) in a database of the test's own and returns its DSN and a
// connection.
func changeFeed(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE TABLE change_events (id bigserial PRIMARY KEY, family text NOT NULL, record_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return dsn, conn
}

// change commits a change event for family and its NOTIFY, in one
// transaction, as the records backend does.
func change(t *testing.T, conn *pgx.Conn, family string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO change_events (family, record_id) VALUES ($1, 'r1')`, family); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `NOTIFY civicgate_change_events, ''`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func generation(in *instance, tag string) uint64 {
	in.store.genMu.RLock()
	defer in.store.genMu.RUnlock()
	return in.store.gens[tag]
}

// TestFeedNotificationInvalidatesItsFamily: a change event for members,
// announced by NOTIFY, invalidates the entries tagged members and not those
// tagged bills.
func TestFeedNotificationInvalidatesItsFamily(t *testing.T) {
	dsn, conn := changeFeed(t)
	change(t, conn, "members") // before the listener: under its starting cursor
	g := startGateway(t, fmt.Sprintf("invalidate postgres %s {\nfeed change_events\n}", dsn), "")
	in := liveInstance(t)
	await(t, in, "the listener listens", in.up.Load)
	members := func() answer { return g.query(t, q1, map[string]string{"X-Families": "members"}) }
	bills := func() answer { return g.query(t, q1, map[string]string{"X-Families": "bills"}) }
	members()
	bills()
	if members().outcome != "hit" || bills().outcome != "hit" {
		t.Fatal("entries not stored")
	}
	g.up.version.Store(2)
	change(t, conn, "members")
	await(t, in, "members is invalidated", func() bool { return generation(in, "members") > 0 })
	if a := members(); a.outcome != "miss" || !strings.Contains(a.body, `"version":2`) {
		t.Fatalf("members after its change: %+v", a)
	}
	if a := bills(); a.outcome != "hit" || !strings.Contains(a.body, `"version":1`) {
		t.Fatalf("bills after a members change: %+v", a)
	}
	if generation(in, "bills") != 0 {
		t.Fatal("bills was invalidated")
	}
}

// TestPayloadNamesTheTags: without a feed, the payload is the tags; an
// empty payload flushes everything.
func TestPayloadNamesTheTags(t *testing.T) {
	dsn, conn := changeFeed(t)
	g := startGateway(t, fmt.Sprintf("invalidate postgres %s {\nchannel cache_tags\n}", dsn), "")
	in := liveInstance(t)
	await(t, in, "the listener listens", in.up.Load)
	g.query(t, q1, map[string]string{"X-Families": "members"})
	g.query(t, q1, nil)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `NOTIFY cache_tags, 'members, votes'`); err != nil {
		t.Fatal(err)
	}
	await(t, in, "members is invalidated", func() bool { return generation(in, "votes") > 0 })
	if g.query(t, q1, map[string]string{"X-Families": "members"}).outcome != "miss" || g.query(t, q1, nil).outcome != "hit" {
		t.Fatal("want members a miss and bills a hit")
	}
	seq := in.store.seqNow()
	if _, err := conn.Exec(ctx, `NOTIFY cache_tags, ''`); err != nil {
		t.Fatal(err)
	}
	await(t, in, "the store is flushed", func() bool { return in.store.seqNow() > seq })
	if g.query(t, q1, nil).outcome != "miss" {
		t.Fatal("an empty payload did not flush")
	}
}

// TestLostListenerFlushesAndRefusesHits: when the listener's connection is
// cut the store is flushed and no hit is served (nor anything stored) until
// it listens again; then it starts from an empty store.
func TestLostListenerFlushesAndRefusesHits(t *testing.T) {
	dsn, conn := changeFeed(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	g := startGateway(t, fmt.Sprintf("invalidate postgres %s {\nfeed change_events\n}", u), "")
	in := liveInstance(t)
	await(t, in, "the listener listens", in.up.Load)
	g.query(t, q1, nil)
	if g.query(t, q1, nil).outcome != "hit" {
		t.Fatal("not stored")
	}
	proxy.Cut()
	await(t, in, "the listener is down", func() bool { return !in.up.Load() })
	if n, _ := in.store.stats(); n != 0 {
		t.Fatalf("%d entries left after the listener was lost", n)
	}
	calls := g.up.calls.Load()
	for range 2 {
		a := g.query(t, q1, nil)
		if a.cacheStatus != "civicgate; fwd=miss; detail=invalidation-down" || a.outcome != "stale-refused" {
			t.Fatalf("while down: %+v", a)
		}
	}
	if n := g.up.calls.Load() - calls; n != 2 {
		t.Fatalf("%d upstream calls while down, want 2", n)
	}
	// a change while nobody listens is covered by the flush on recovery
	change(t, conn, "bills")
	proxy.Restore()
	await(t, in, "the listener listens again", in.up.Load)
	if a := g.query(t, q1, nil); a.cacheStatus != "civicgate; fwd=miss; stored" {
		t.Fatalf("after recovery: %+v", a)
	}
	if g.query(t, q1, nil).outcome != "hit" {
		t.Fatal("no hit after recovery")
	}
	// the cursor was re-read: the change made while down is not replayed
	if generation(in, "bills") != 0 {
		t.Fatal("an old change was replayed")
	}
}

// TestQuietListenerPingsAndStaysUp: a listener that hears nothing pings its
// connection and keeps listening — no reconnect, no flush.
func TestQuietListenerPingsAndStaysUp(t *testing.T) {
	dsn, _ := changeFeed(t)
	in := newInstance(1<<20, 1<<10, &listenConfig{dsn: dsn, channel: DefaultChannel, feed: "change_events"})
	in.idlePing = 20 * time.Millisecond
	in.start()
	t.Cleanup(func() { _ = in.Destruct() })
	await(t, in, "the listener listens", in.up.Load)
	seq := in.store.seqNow()
	await(t, in, "three pings", func() bool { return in.pings.Load() >= 3 })
	if !in.up.Load() || in.store.seqNow() != seq {
		t.Fatalf("up %v, seq %d → %d: the quiet listener reconnected or flushed", in.up.Load(), seq, in.store.seqNow())
	}
}
