package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func newStore(t *testing.T) (*feedtest.DB, *store.Store) {
	t.Helper()
	db := feedtest.New(t)
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return db, store.New(db.Pool, box)
}

// claimParams: a minute's lease, maxInFlight per endpoint, limit attempts,
// no per-organization bound to speak of.
func claimParams(maxInFlight, limit int) store.ClaimParams {
	return store.ClaimParams{Lease: time.Minute, MaxInFlight: maxInFlight, MaxInFlightPerOrg: 1000, Limit: limit, Tiers: feedtest.Tiers()}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestMigrateIsIdempotent(t *testing.T) {
	db, _ := newStore(t)
	ctx := ctxT(t)
	for range 2 {
		if err := store.Migrate(ctx, db.Pool); err != nil {
			t.Fatal(err)
		}
	}
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM civicgate.civic_webhooks_migrations`).Scan(&n); err != nil || n != len(files) || n < 2 {
		t.Fatalf("migrations recorded: %d of %d files %v", n, len(files), err)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 42, 1 << 40} {
		got, err := store.DecodeCursor(store.EncodeCursor(n))
		if err != nil || got != n {
			t.Fatalf("%d: got %d %v", n, got, err)
		}
	}
	for _, bad := range []string{"x", "Y2UxOg", "Y2UxOi0x", "Y2UxOjAx", "Zm9vOjE", "Y2UxOjE="} {
		if _, err := store.DecodeCursor(bad); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("%q decoded: %v", bad, err)
		}
	}
}

// deliveredSeqs returns the event ids fanned out to endpoint id, in order.
func deliveredSeqs(t *testing.T, db *feedtest.DB, endpoint string) []int64 {
	t.Helper()
	rows, err := db.Pool.Query(ctxT(t), `SELECT event_seq FROM civicgate.webhook_deliveries WHERE endpoint_id = $1 AND kind = 'event' ORDER BY event_seq`, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

// waitAdvisoryWaiters waits until n sessions wait for an advisory lock.
func waitAdvisoryWaiters(t *testing.T, db *feedtest.DB, n int) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("%d sessions waiting for the feed lock", n), func() error {
		var got int
		if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&got); err != nil {
			return err
		}
		if got < n {
			return fmt.Errorf("%d wait", got)
		}
		return nil
	})
}

// TestConcurrentWritersNeverMakeTheFeedSkip: a writer that drew an id and has
// not committed yet, while a later writer waits to commit a higher id, never
// lets the fan-out (or a feed reader) move past the lower id.
func TestConcurrentWritersNeverMakeTheFeedSkip(t *testing.T) {
	db, s := newStore(t)
	ctx := ctxT(t)
	now := time.Now()
	org := db.NewOrg(t, "a", "paid")
	ep, _, err := s.CreateEndpoint(ctx, now, store.EndpointSpec{Org: org.ID, URL: "https://example.org/hook", Families: feedtest.EventFamilies()}, 0)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("deterministic interleaving", func(t *testing.T) {
		txA, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		idsA, err := feedtest.InsertTx(ctx, txA, "bills", 1) // draws an id, does not commit yet
		if err != nil {
			t.Fatal(err)
		}
		bDone := make(chan []int64, 1)
		go func() {
			var ids []int64
			_ = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
				var err error
				ids, err = feedtest.InsertTx(ctx, tx, "members", 1)
				return err
			})
			bDone <- ids
		}()
		fanDone := make(chan error, 1)
		go func() {
			_, err := s.FanOut(ctx, now, 100, feedtest.Tiers())
			fanDone <- err
		}()
		waitAdvisoryWaiters(t, db, 2) // writer B and the fan-out both wait for writer A
		select {
		case err := <-fanDone:
			t.Fatalf("fan-out returned while a writer held the feed: %v", err)
		default:
		}
		if err := txA.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		idsB := <-bDone
		if err := <-fanDone; err != nil {
			t.Fatal(err)
		}
		if _, err := s.FanOut(ctx, now, 100, feedtest.Tiers()); err != nil {
			t.Fatal(err)
		}
		want := append(idsA, idsB...)
		if got := deliveredSeqs(t, db, ep.ID); !slices.Equal(got, want) {
			t.Fatalf("fanned out %v, want %v", got, want)
		}
	})

	t.Run("many writers, rollbacks, concurrent readers", func(t *testing.T) {
		start := deliveredSeqs(t, db, ep.ID)
		after := start[len(start)-1]
		var mu sync.Mutex
		var committed []int64
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for range 25 {
					fam := feedtest.EventFamilies()[r.IntN(len(feedtest.EventFamilies()))]
					rollback := r.IntN(5) == 0
					var ids []int64
					err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
						var err error
						if ids, err = feedtest.InsertTx(ctx, tx, fam, 1+r.IntN(4)); err != nil {
							return err
						}
						if _, err := tx.Exec(ctx, `SELECT pg_sleep($1)`, float64(r.IntN(3))/1000); err != nil {
							return err
						}
						if rollback {
							return errors.New("rollback")
						}
						return nil
					})
					if rollback {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					committed = append(committed, ids...)
					mu.Unlock()
				}
			}()
		}
		writersDone := make(chan struct{})
		go func() { wg.Wait(); close(writersDone) }()

		// A polling reader and the fan-out run while the writers write.
		var polled []int64
		cursor := after
		fanErr := make(chan error, 1)
		go func() {
			for {
				select {
				case <-writersDone:
					_, err := s.FanOut(ctx, now, 7, feedtest.Tiers())
					for err == nil {
						var n int
						if n, err = s.FanOut(ctx, now, 7, feedtest.Tiers()); n == 0 {
							break
						}
					}
					fanErr <- err
					return
				default:
				}
				if _, err := s.FanOut(ctx, now, 7, feedtest.Tiers()); err != nil {
					fanErr <- err
					return
				}
			}
		}()
		for done := false; !done; {
			select {
			case <-writersDone:
				done = true
			default:
			}
			for {
				evs, more, err := s.Changes(ctx, cursor, feedtest.EventFamilies(), 5)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					polled = append(polled, e.Seq)
					cursor = e.Seq
				}
				if !more {
					break
				}
			}
		}
		if err := <-fanErr; err != nil {
			t.Fatal(err)
		}
		slices.Sort(committed)
		if len(committed) < 100 {
			t.Fatalf("only %d events committed", len(committed))
		}
		if !slices.Equal(polled, committed) {
			t.Fatalf("the polling reader saw %d events, %d were committed (first difference matters)", len(polled), len(committed))
		}
		got := deliveredSeqs(t, db, ep.ID)
		if !slices.Equal(got[len(start):], committed) {
			t.Fatalf("fan-out delivered %d events, %d were committed", len(got)-len(start), len(committed))
		}
	})

	// Control: the check above can fail. Writers that ignore the contract
	// (no feed lock) make a plain reader see a later id before an earlier one
	// commits, which is exactly the skip the contract rules out.
	t.Run("control: writers without the lock do create a gap", func(t *testing.T) {
		txA, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer txA.Rollback(ctx)
		var idA, idB int64
		if err := txA.QueryRow(ctx, `INSERT INTO change_events (family, record_id, type, record) VALUES ('bills', 'x', 'created', '{}') RETURNING id`).Scan(&idA); err != nil {
			t.Fatal(err)
		}
		if err := db.Pool.QueryRow(ctx, `INSERT INTO change_events (family, record_id, type, record) VALUES ('bills', 'y', 'created', '{}') RETURNING id`).Scan(&idB); err != nil {
			t.Fatal(err)
		}
		evs, _, err := s.Changes(ctx, idA-1, feedtest.EventFamilies(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Seq != idB {
			t.Fatalf("expected the reader to see only the later id %d (a gap at %d), got %v", idB, idA, evs)
		}
	})
}

// TestClaimLeasesEachAttemptOnceAndBoundsInFlight: concurrent claimers get
// disjoint deliveries, never more than maxInFlight per endpoint; an expired
// lease is claimable again and its old holder can no longer finish it.
func TestClaimLeasesEachAttemptOnceAndBoundsInFlight(t *testing.T) {
	db, s := newStore(t)
	ctx := ctxT(t)
	now := time.Now()
	org := db.NewOrg(t, "a", "paid")
	ep, _, err := s.CreateEndpoint(ctx, now, store.EndpointSpec{Org: org.ID, URL: "https://example.org/hook", Families: []string{"bills"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	db.Insert(t, "bills", 10)
	if n, err := s.FanOut(ctx, now, 100, feedtest.Tiers()); err != nil || n != 10 {
		t.Fatalf("fan-out: %d %v", n, err)
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var all []store.Job
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs, err := s.Claim(ctx, now, claimParams(3, 10), store.RenderEnvelope)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, j := range jobs {
				seen[j.DeliveryID]++
				all = append(all, j)
			}
		}()
	}
	wg.Wait()
	if len(all) != 3 || len(seen) != 3 {
		t.Fatalf("claimed %d attempts (%d distinct), want 3 (max in flight)", len(all), len(seen))
	}
	for _, j := range all {
		if j.Attempt != 1 || j.EndpointID != ep.ID || len(j.Body) == 0 || len(j.Keys) != 1 || j.Family != "bills" {
			t.Fatalf("job %+v", j)
		}
	}
	// Finishing one frees one slot.
	if err := s.Finish(ctx, now, all[0], store.Outcome{Status: "delivered", StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	more, err := s.Claim(ctx, now, claimParams(3, 10), store.RenderEnvelope)
	if err != nil || len(more) != 1 {
		t.Fatalf("after one finished: %d %v", len(more), err)
	}
	// Leases expire: a minute later the three in flight are due again
	// (attempt 2), and the old holders cannot record anything.
	later := now.Add(61 * time.Second)
	again, err := s.Claim(ctx, later, claimParams(10, 20), store.RenderEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 9 {
		t.Fatalf("after lease expiry claimed %d, want 9 (3 expired + 6 never claimed)", len(again))
	}
	if err := s.Finish(ctx, later, all[1], store.Outcome{Status: "delivered"}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("finish with an expired lease: %v", err)
	}
}

// TestPruneDeletesOnlyOldFinishedDeliveries: retention removes delivered and
// dead-lettered rows finished before the cut-off, never pending ones.
func TestPruneDeletesOnlyOldFinishedDeliveries(t *testing.T) {
	db, s := newStore(t)
	ctx := ctxT(t)
	now := time.Now()
	org := db.NewOrg(t, "a", "paid")
	ep, _, err := s.CreateEndpoint(ctx, now, store.EndpointSpec{Org: org.ID, URL: "https://example.org/hook", Families: []string{"bills"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	db.Insert(t, "bills", 4)
	if _, err := s.FanOut(ctx, now, 100, feedtest.Tiers()); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Claim(ctx, now, claimParams(10, 10), store.RenderEnvelope)
	if err != nil || len(jobs) != 4 {
		t.Fatalf("claim %d %v", len(jobs), err)
	}
	old := now.Add(-48 * time.Hour)
	_ = s.Finish(ctx, old, jobs[0], store.Outcome{Status: "delivered"})
	_ = s.Finish(ctx, old, jobs[1], store.Outcome{Status: "failed"})
	_ = s.Finish(ctx, now, jobs[2], store.Outcome{Status: "delivered"})
	_ = s.Finish(ctx, old, jobs[3], store.Outcome{Status: "pending", NextAt: now})
	n, err := s.Prune(ctx, now.Add(-24*time.Hour), 1000)
	if err != nil || n != 2 {
		t.Fatalf("pruned %d %v, want 2", n, err)
	}
	ds, _, err := s.Deliveries(ctx, org.ID, ep.ID, 0, 10)
	if err != nil || len(ds) != 2 {
		t.Fatalf("left %d %v", len(ds), err)
	}
}

// TestReplayWithoutCursorStartsAtRegistration: a replay without from_cursor
// schedules the events recorded since the endpoint was registered, not the
// feed's whole history (543 events, some from before the endpoint existed,
// were once scheduled); from a cursor it still replays everything after it.
func TestReplayWithoutCursorStartsAtRegistration(t *testing.T) {
	db, s := newStore(t)
	ctx := ctxT(t)
	org := db.NewOrg(t, "a", "paid")
	db.Insert(t, "bills", 5) // before the endpoint
	var registered time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&registered); err != nil {
		t.Fatal(err)
	}
	ep, _, err := s.CreateEndpoint(ctx, registered, store.EndpointSpec{Org: org.ID, URL: "https://example.org/hook", Families: []string{"bills"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	db.Insert(t, "bills", 3) // after it
	res, err := s.Replay(ctx, time.Now(), org.ID, ep.ID, store.SinceCreation, 100, []string{"bills"})
	if err != nil || res.Scheduled != 3 || res.More {
		t.Fatalf("since creation: %+v %v, want the 3 events recorded after the registration", res, err)
	}
	res, err = s.Replay(ctx, time.Now(), org.ID, ep.ID, 0, 100, []string{"bills"})
	if err != nil || res.Scheduled != 8 {
		t.Fatalf("from the feed's start: %+v %v, want all 8", res, err)
	}
}
