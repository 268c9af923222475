package store

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// replicaEnv is a migrated database "records" on a private primary with streaming replicas, and pools on each.
type replicaEnv struct {
	c        *testenv.PGCluster
	primary  *pgxpool.Pool
	replicas []Replica
	logs     *lockedBuffer
}

func newReplicaEnv(t testing.TB, replicas int) *replicaEnv {
	t.Helper()
	c := testenv.StartPostgresPrimary(t)
	c.CreateDatabase("records")
	e := &replicaEnv{c: c, logs: &lockedBuffer{}}
	e.primary = openTestPool(t, c.Primary.DSN("records"))
	ctx := context.Background()
	if err := migrations.Apply(ctx, e.primary); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		e.insertBill(t, i+1, fmt.Sprintf("2023-01-%02d", i+1))
	}
	for range replicas { // cloned after the data: no waiting for it to stream over
		r := c.AddReplica()
		e.replicas = append(e.replicas, Replica{Name: r.Name, Pool: openTestPool(t, r.DSN("records"))})
	}
	return e
}

func openTestPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ConfigurePool(cfg)
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// insertBill writes bill hr<n>-118 on the primary.
func (e *replicaEnv) insertBill(t testing.TB, n int, introduced string) {
	t.Helper()
	if _, err := e.primary.Exec(context.Background(), `INSERT INTO bills (id, congress, type, number, official_title, introduced_date, committee_names)
		VALUES ($1, 118, 'hr', $2, 'A bill', $3::date, '')`, fmt.Sprintf("hr%d-118", n), n, introduced); err != nil {
		t.Fatal(err)
	}
}

// store builds the Store under test; opts.Logger is set to the env's log buffer.
func (e *replicaEnv) store(opts ReplicaOptions) (*Store, *Replicas) {
	opts.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	r := NewReplicas(e.primary, e.replicas, opts)
	codec, _ := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	return New(e.primary, codec, WithReplicas(r)), r
}

// manual is routing stepped by CheckNow only (the ticker never fires within a test), logging every change.
var manual = ReplicaOptions{MaxLag: 3 * time.Second, CheckInterval: time.Hour, CheckTimeout: 10 * time.Second, LogEvery: time.Nanosecond}

func billExists(t *testing.T, s *Store, id string) bool {
	t.Helper()
	b, err := s.Bill(context.Background(), id)
	if err != nil {
		t.Fatalf("read bill %s: %v", id, err)
	}
	return b != nil
}

func stateOf(r *Replicas, i int) ReplicaStats { return r.Stats().Replicas[i] }

// TestReadsGoToTheReplicaUntilItLags proves where reads go with the data: with replay paused, a row written on the
// primary is invisible through the Store while the replica's lag is within the maximum; once the lag exceeds it
// the read goes to the primary and sees the row; after replay resumes reads are back on the replica. A cursor of
// a replica page continues on the primary.
func TestReadsGoToTheReplicaUntilItLags(t *testing.T) {
	t.Parallel()
	e := newReplicaEnv(t, 1)
	s, r := e.store(manual)
	ctx := context.Background()
	if !billExists(t, s, "hr1-118") || r.Stats().OnPrimary != 1 {
		t.Fatalf("before any check a read must go to the primary: %+v", r.Stats())
	}
	r.CheckNow(ctx)
	if st := stateOf(r, 0); st.State != StateOK || !st.Usable {
		t.Fatalf("caught-up replica not usable: %+v", st)
	}
	two := 2
	page1, err := s.Bills(ctx, records.BillsInput{Limit: &two})
	if err != nil || len(page1.Items) != 2 || page1.NextCursor == nil {
		t.Fatalf("page 1: %+v, %v", page1, err)
	}
	if st := stateOf(r, 0); st.Reads != 1 {
		t.Fatalf("page 1 was not read on the replica: %+v", st)
	}

	e.c.PauseReplay(e.c.Replicas[0])
	e.insertBill(t, 99, "2024-06-01") // newest: it would head the first page
	r.CheckNow(ctx)                   // the write is just seen: lag within the maximum
	if st := stateOf(r, 0); st.State != StateOK || st.Lag > manual.MaxLag {
		t.Fatalf("replica skipped right after the write: %+v", st)
	}
	if billExists(t, s, "hr99-118") {
		t.Fatal("the read saw a row the paused replica has not replayed: it did not go to the replica")
	}
	if st := stateOf(r, 0); st.Reads != 2 {
		t.Fatalf("read not counted on the replica: %+v", st)
	}

	testenv.Eventually(t, 20*time.Second, "replica skipped for lag", func() error {
		r.CheckNow(ctx)
		if st := stateOf(r, 0); st.State != StateLagging || st.Usable || st.Lag <= manual.MaxLag {
			return fmt.Errorf("state %+v", st)
		}
		return nil
	})
	onPrimary := r.Stats().OnPrimary
	if !billExists(t, s, "hr99-118") {
		t.Fatal("with the replica skipped the read must go to the primary and see the new row")
	}
	page2, err := s.Bills(ctx, records.BillsInput{Limit: &two, Cursor: page1.NextCursor})
	if err != nil || len(page2.Items) != 2 {
		t.Fatalf("page 2 on the primary: %+v, %v", page2, err)
	}
	if got := r.Stats().OnPrimary - onPrimary; got != 2 {
		t.Fatalf("%d reads on the primary, want 2", got)
	}
	// Keyset paging: page 2 continues after page 1's last row whichever server answers (the new row sorts before
	// page 1, so it is not on page 2).
	if page1.Items[1].ID != "hr5-118" || page2.Items[0].ID != "hr4-118" || page2.Items[1].ID != "hr3-118" {
		t.Fatalf("pages %s,%s then %s,%s", page1.Items[0].ID, page1.Items[1].ID, page2.Items[0].ID, page2.Items[1].ID)
	}

	e.c.ResumeReplay(e.c.Replicas[0])
	testenv.Eventually(t, 20*time.Second, "replica usable again", func() error {
		r.CheckNow(ctx)
		if st := stateOf(r, 0); st.State != StateOK {
			return fmt.Errorf("state %+v", st)
		}
		return nil
	})
	reads := stateOf(r, 0).Reads
	if !billExists(t, s, "hr99-118") || stateOf(r, 0).Reads != reads+1 {
		t.Fatalf("after catching up the replica must serve the row: %+v", stateOf(r, 0))
	}
	logs := e.logs.String()
	for _, want := range []string{"read replica in use", "replay lag above the maximum", "no read replica is usable", "reads go to read replicas again"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %q in the log:\n%s", want, logs)
		}
	}
}

// TestReadsFollowTheChangeFeed: a sync's change event committed on the primary sends reads to the primary until
// the replica has replayed it, even within the lag bound (LagOnly reads the paused replica and misses the row);
// once replayed, the replica serves again without waiting for a check.
func TestReadsFollowTheChangeFeed(t *testing.T) {
	t.Parallel()
	e := newReplicaEnv(t, 1)
	s, r := e.store(manual)
	lagOnly := manual
	lagOnly.LagOnly = true
	sLag, rLag := e.store(lagOnly)
	ctx := context.Background()
	r.CheckNow(ctx)
	rLag.CheckNow(ctx)
	e.c.PauseReplay(e.c.Replicas[0])
	if _, err := e.primary.Exec(ctx, `INSERT INTO bills (id, congress, type, number, official_title, committee_names)
		VALUES ('hr77-118', 118, 'hr', 77, 'A synced bill', '');
		INSERT INTO change_events (family, record_id, type, record) VALUES ('bills', 'hr77-118', 'created', '{}')`); err != nil {
		t.Fatal(err)
	}
	if billExists(t, sLag, "hr77-118") || stateOf(rLag, 0).Reads != 1 {
		t.Fatalf("LagOnly: the read must go to the paused replica: %+v", rLag.Stats())
	}
	if !billExists(t, s, "hr77-118") {
		t.Fatal("a read after the change event missed its row")
	}
	if st := r.Stats(); st.BehindFeed != 1 || st.Replicas[0].Reads != 1 || !st.Replicas[0].Usable {
		t.Fatalf("want the replica's answer dropped for the feed and the read run on the primary, the replica still usable: %+v", st)
	}
	e.c.ResumeReplay(e.c.Replicas[0])
	e.c.WaitCaughtUp(e.c.Replicas[0])
	if !billExists(t, s, "hr77-118") {
		t.Fatal("row missing after replay")
	}
	if st := r.Stats(); st.BehindFeed != 1 || st.Replicas[0].Reads != 2 {
		t.Fatalf("want the replica, caught up, to serve without a new check: %+v", st)
	}
	if !billExists(t, s, "hr77-118") || r.Stats().BehindFeed != 1 {
		t.Fatalf("the replica's known feed position was not raised: %+v", r.Stats())
	}
}

// TestReadsSurviveAKilledReplica: a read sent to a replica that died is answered by the primary, the replica is
// taken out at once, and the next check reports it down without any DSN in the log.
func TestReadsSurviveAKilledReplica(t *testing.T) {
	t.Parallel()
	e := newReplicaEnv(t, 1)
	s, r := e.store(manual)
	ctx := context.Background()
	r.CheckNow(ctx)
	if !billExists(t, s, "hr1-118") || stateOf(r, 0).Reads != 1 {
		t.Fatalf("first read not on the replica: %+v", r.Stats())
	}
	e.c.Replicas[0].Stop()
	// The first read after the death is traced: its span says it went to the replica, failed and ran on the primary.
	rec := tracetest.NewSpanRecorder()
	tctx, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test").Start(ctx, "resolve")
	if b, err := s.Bill(tctx, "hr2-118"); err != nil || b == nil {
		t.Fatalf("the read after the replica died: %v, %v", b, err)
	}
	span.End()
	ended := rec.Ended()
	if len(ended) != 1 || len(ended[0].Events()) != 1 || !hasAttr(ended[0].Attributes(), ReadTargetAttribute, "primary") {
		t.Fatalf("span of the retried read: %+v", ended)
	}
	for i := range 4 {
		if !billExists(t, s, "hr2-118") {
			t.Fatalf("read %d after the replica died lost the row", i)
		}
	}
	st := r.Stats()
	if st.RetriedOnPrimary != 1 || st.Replicas[0].ReadErrors != 1 || st.Replicas[0].Usable || st.OnPrimary != 4 {
		t.Fatalf("want one failed replica read retried on the primary, then the primary: %+v", st)
	}
	r.CheckNow(ctx)
	if st := stateOf(r, 0); st.State != StateDown {
		t.Fatalf("dead replica state %+v", st)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "check failed") || !strings.Contains(logs, `states="replica1: down (connection refused)"`) {
		t.Errorf("no down transition with its cause in the log:\n%s", logs)
	}
	if strings.Contains(logs, "postgres://") || strings.Contains(logs, "records") {
		t.Errorf("a DSN or part of one reached the log:\n%s", logs)
	}
}

// TestReadsRoundRobinOverReplicas runs the background checker: both replicas become usable and reads alternate
// between them; stopping the checker returns.
func TestReadsRoundRobinOverReplicas(t *testing.T) {
	t.Parallel()
	e := newReplicaEnv(t, 2)
	s, r := e.store(ReplicaOptions{CheckInterval: 100 * time.Millisecond, CheckTimeout: 10 * time.Second})
	stop := r.Start(context.Background())
	testenv.Eventually(t, 20*time.Second, "both replicas usable", func() error {
		for _, st := range r.Stats().Replicas {
			if !st.Usable {
				return fmt.Errorf("%+v", st)
			}
		}
		return nil
	})
	for range 10 {
		if !billExists(t, s, "hr3-118") {
			t.Fatal("row missing")
		}
	}
	stop()
	st := r.Stats()
	if st.Replicas[0].Reads != 5 || st.Replicas[1].Reads != 5 || st.OnPrimary != 0 {
		t.Fatalf("reads not spread evenly: %+v", st)
	}
}

// TestLagOfSamples checks the lag arithmetic: 0 when the replica has replayed the primary's newest position
// (however old: an idle primary is no lag), the age of the first position beyond the replica's otherwise, and
// samples pruned to what MaxLag needs with one older sentinel, so a replica behind all of them still lags.
func TestLagOfSamples(t *testing.T) {
	r := NewReplicas(nil, nil, ReplicaOptions{MaxLag: 5 * time.Second, CheckInterval: time.Second})
	t0 := time.Now().Add(-time.Hour)
	r.addSample(t0, 100)
	r.addSample(t0.Add(time.Minute), 100) // idle: not kept
	r.addSample(t0.Add(50*time.Minute), 200)
	r.addSample(t0.Add(59*time.Minute), 300) // prunes (t0, 100): (50 min, 200) is the sentinel
	now := t0.Add(time.Hour)
	for replayed, want := range map[int64]time.Duration{300: 0, 400: 0, 250: time.Minute, 150: 10 * time.Minute, 10: 10 * time.Minute} {
		if got := r.lagOf(replayed, now); got != want {
			t.Errorf("lagOf(%d) = %s, want %s", replayed, got, want)
		}
	}
	for i := range 20 { // the primary writes every second for 20 s
		r.addSample(now.Add(time.Duration(i)*time.Second), int64(400+i))
	}
	now = now.Add(19 * time.Second)
	if n := len(r.samples); n > 9 || n < 8 {
		t.Fatalf("%d samples kept, want MaxLag+2 intervals of them and a sentinel", n)
	}
	if got := r.lagOf(150, now); got <= r.opts.MaxLag {
		t.Fatalf("a replica behind every kept sample lags %s, want more than MaxLag", got)
	}
	if got := r.lagOf(417, now); got != time.Second {
		t.Fatalf("lagOf(417) = %s, want 1s", got)
	}
}

// TestTransitionLogRateLimits: a change is logged at once, changes within LogEvery of the last line are counted
// and the state reached is logged when the time is up; a flap back to the logged state logs nothing.
func TestTransitionLogRateLimits(t *testing.T) {
	l := transitionLog{logged: StateUnchecked, current: StateUnchecked}
	t0 := time.Now()
	every := 10 * time.Second
	step := func(state string, at time.Duration, wantDue bool, wantChanges int) {
		t.Helper()
		due, changes := l.observe(state, t0.Add(at), every)
		if due != wantDue || changes != wantChanges {
			t.Fatalf("observe(%s, +%s) = %v, %d; want %v, %d", state, at, due, changes, wantDue, wantChanges)
		}
	}
	step(StateUnchecked, 0, false, 0)
	step(StateOK, time.Second, true, 1)
	step(StateDown, 2*time.Second, false, 0)
	step(StateOK, 3*time.Second, false, 0) // back to what was logged
	step(StateLagging, 4*time.Second, false, 0)
	step(StateLagging, 11*time.Second, true, 3)
	step(StateLagging, 30*time.Second, false, 0)
}

func hasAttr(attrs []attribute.KeyValue, key, value string) bool {
	for _, a := range attrs {
		if string(a.Key) == key && a.Value.AsString() == value {
			return true
		}
	}
	return false
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
