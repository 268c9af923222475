package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Read routing (docs/read-replicas.md): every read of a Store goes to a usable replica, round-robin; a replica
// is usable when its last check answered, it is a standby, and its replay lag is at most MaxLag. With no usable
// replica the read goes to the primary. A read that fails on a replica (other than by its own context ending) is
// run again on the primary, so one dead replica never fails a request.

// Default read-routing settings.
const (
	DefaultMaxLag        = 5 * time.Second
	DefaultCheckInterval = time.Second
	DefaultLogEvery      = 10 * time.Second
)

// ReadTargetAttribute is the span attribute naming the server a traced read ran on: "primary" or
// "replica <name>".
const ReadTargetAttribute = "civicgate.db.read_target"

// ReplicaOptions configures read routing. Zero fields take the defaults.
type ReplicaOptions struct {
	// LagOnly turns off the change-feed floor (docs/read-replicas.md "Consistency"): by default a read goes to a
	// replica only if it has replayed the newest change event the primary had when the read started.
	LagOnly bool
	// MaxLag is the replay lag beyond which a replica is skipped (default 5 s).
	MaxLag time.Duration
	// CheckInterval is how often the background checker measures every replica (default 1 s).
	CheckInterval time.Duration
	// CheckTimeout bounds one replica's check, connecting included (default CheckInterval).
	CheckTimeout time.Duration
	// LogEvery is the least time between two log lines about one replica's state (default 10 s); changes in
	// between are counted and the state reached is logged when the time is up.
	LogEvery time.Duration
	Logger   *slog.Logger
}

// Replica is one read replica: a pool on a hot standby and the name logs and stats show (never a DSN).
type Replica struct {
	Name string
	Pool *pgxpool.Pool
}

// Replicas routes reads between read replicas and the primary. Build it with NewReplicas, run its checker with
// Start, and pass it to New with WithReplicas.
type Replicas struct {
	primary *pgxpool.Pool
	opts    ReplicaOptions
	log     *slog.Logger
	reps    []*replica
	next    atomic.Uint64

	onPrimary        atomic.Uint64 // reads that found no usable replica
	retriedOnPrimary atomic.Uint64 // replica reads that failed and were run again on the primary
	behindFeed       atomic.Uint64 // reads sent to the primary: the replica had not replayed the newest change event
	primaryUp        atomic.Bool   // the primary answered the last check round

	checkMu sync.Mutex // one check round at a time; guards samples and the log state below
	samples []lsnSample
	all     transitionLog // "no usable replica" ↔ "replicas in use"
}

// replica is one replica's routing state. usable is read by every request; the rest is the checker's.
type replica struct {
	Replica
	usable     atomic.Bool
	feed       atomic.Int64 // the highest change event id it is known to have replayed (only grows)
	reads      atomic.Uint64
	readErrors atomic.Uint64

	mu    sync.Mutex // guards state and lag for Stats
	state string
	lag   time.Duration

	log          transitionLog
	errorsLogged uint64
}

// Replica states (ReplicaStats.State).
const (
	StateUnchecked  = "unchecked"   // no check has answered yet: not used
	StateOK         = "ok"          // used
	StateLagging    = "lagging"     // replay lag above MaxLag: skipped
	StateDown       = "down"        // the check (or a read) failed to reach it: skipped
	StateNotStandby = "not-standby" // not in recovery (promoted, or not a replica at all): skipped
)

// NewReplicas routes reads to reps, with primary as the fallback and the reference for lag.
func NewReplicas(primary *pgxpool.Pool, reps []Replica, opts ReplicaOptions) *Replicas {
	if opts.MaxLag <= 0 {
		opts.MaxLag = DefaultMaxLag
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = opts.CheckInterval
	}
	if opts.LogEvery <= 0 {
		opts.LogEvery = DefaultLogEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Replicas{primary: primary, opts: opts, log: opts.Logger}
	r.primaryUp.Store(true)
	r.all.logged, r.all.current = "replicas", "replicas"
	for _, rep := range reps {
		x := &replica{Replica: rep, state: StateUnchecked}
		x.log.logged, x.log.current = StateUnchecked, StateUnchecked
		r.reps = append(r.reps, x)
	}
	return r
}

// Start runs the checker in the background: a check round at once, then every CheckInterval, until ctx ends or
// the returned stop is called (stop waits for the checker to return). Reads never wait for a check.
func (r *Replicas) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.opts.CheckInterval)
		defer t.Stop()
		for {
			r.CheckNow(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// pick returns the next usable replica, round-robin, or nil when none is usable.
func (r *Replicas) pick() *replica {
	n := uint64(len(r.reps))
	start := r.next.Add(1)
	for i := range n {
		if rep := r.reps[(start+i)%n]; rep.usable.Load() {
			return rep
		}
	}
	return nil
}

// read runs fn on a usable replica, or on the primary when there is none, when fn failed on the replica, or when
// the replica's answer may predate a sync (replicafeed.go).
func (r *Replicas) read(ctx context.Context, fn func(db *pgxpool.Pool) error) error {
	rep := r.pick()
	span := trace.SpanFromContext(ctx) // the resolver's span when traced: it names the server that answered
	if rep == nil {
		r.onPrimary.Add(1)
		if span.IsRecording() {
			span.SetAttributes(attribute.String(ReadTargetAttribute, "primary"))
		}
		return fn(r.primary)
	}
	// The change-feed floor is looked up on the primary while fn runs on the replica: known, read before fn
	// starts, is a position the replica's snapshot is sure to include.
	known := rep.feed.Load()
	var floor <-chan int64
	if !r.opts.LagOnly && r.primaryUp.Load() {
		floor = r.lookupFloor(ctx)
	}
	rep.reads.Add(1)
	if span.IsRecording() {
		span.SetAttributes(attribute.String(ReadTargetAttribute, "replica "+rep.Name))
	}
	err := fn(rep.Pool)
	if err == nil {
		if floor == nil {
			return nil
		}
		return r.checkFloor(ctx, rep, known, <-floor, fn, span)
	}
	if ctx.Err() != nil {
		return err // the request's own deadline or cancellation: no time left for a second try
	}
	if _, ok := IsInputError(err); ok {
		return err
	}
	rep.readErrors.Add(1)
	if connectionLost(err) {
		rep.usable.Store(false) // until the next check finds it healthy
	}
	r.retriedOnPrimary.Add(1)
	if span.IsRecording() {
		span.AddEvent("read failed on the replica: run again on the primary")
		span.SetAttributes(attribute.String(ReadTargetAttribute, "primary"))
	}
	return fn(r.primary)
}

// connectionLost reports whether err means the server is unreachable or going away (rather than a query
// refused by a live server, such as a recovery conflict).
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true // dial, TLS, I/O or protocol error
	}
	switch pgErr.Code[:2] {
	case "08", "57": // connection exception; operator intervention (shutdown, cannot connect now)
		return true
	}
	return false
}

// ReadStats is a snapshot of read routing, for /debug endpoints and tests.
type ReadStats struct {
	Replicas []ReplicaStats
	// OnPrimary counts reads sent to the primary because no replica was usable.
	OnPrimary uint64
	// RetriedOnPrimary counts reads that failed on a replica and were run again on the primary.
	RetriedOnPrimary uint64
	// BehindFeed counts reads sent to the primary because the replica chosen had not replayed the newest change
	// event yet.
	BehindFeed uint64
}

// ReplicaStats is one replica's routing state and counters.
type ReplicaStats struct {
	Name   string
	State  string
	Usable bool
	// Lag is the replay lag measured by the last check that answered.
	Lag time.Duration
	// Reads counts reads routed to the replica; ReadErrors those of them that failed and went to the primary.
	Reads, ReadErrors uint64
}

// Stats returns the current routing state and counters.
func (r *Replicas) Stats() ReadStats {
	st := ReadStats{OnPrimary: r.onPrimary.Load(), RetriedOnPrimary: r.retriedOnPrimary.Load(), BehindFeed: r.behindFeed.Load()}
	for _, rep := range r.reps {
		rep.mu.Lock()
		state, lag := rep.state, rep.lag
		rep.mu.Unlock()
		st.Replicas = append(st.Replicas, ReplicaStats{Name: rep.Name, State: state, Usable: rep.usable.Load(),
			Lag: lag, Reads: rep.reads.Load(), ReadErrors: rep.readErrors.Load()})
	}
	return st
}

// totalConns is the number of connections the replica pools hold.
func (r *Replicas) totalConns() int32 {
	var n int32
	for _, rep := range r.reps {
		n += rep.Pool.Stat().TotalConns()
	}
	return n
}

// transitionLog rate-limits the log lines about one state: a change is logged at once unless the previous line
// is younger than LogEvery; then it is counted, and the state reached is logged when the time is up.
type transitionLog struct {
	logged  string    // the state the last line reported
	at      time.Time // when
	changes int       // changes since that line
	current string
}

// observe records state and reports whether a line is due now, with the changes it sums up.
func (l *transitionLog) observe(state string, now time.Time, every time.Duration) (due bool, changes int) {
	if state != l.current {
		l.changes++
		l.current = state
	}
	if l.current == l.logged || now.Sub(l.at) < every {
		return false, 0
	}
	changes = l.changes
	l.logged, l.at, l.changes = l.current, now, 0
	return true, changes
}
