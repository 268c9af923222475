package usage

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// DefaultFlushInterval is the interval NewFlusher uses when given <= 0.
const DefaultFlushInterval = 5 * time.Second

// PruneEvery is how often a running Flusher prunes old rows (Prune).
const PruneEvery = time.Hour

// Flusher moves a Meter's counts to PostgreSQL every interval, as batches
// (WriteBatch). A failed write keeps its batch, rows and id, and retries it
// before anything newer, so a batch whose commit landed unheard counts once;
// it is logged once per outage. The Meter's bound caps what an outage adds
// to the one batch held.
type Flusher struct {
	meter    *Meter
	ops      *OperationMeter // nil: operations are not counted
	cross    *CrossingMeter  // nil: no quota crossings recorded
	pool     *pgxpool.Pool
	interval time.Duration
	timeout  time.Duration // for one flush of the running loop
	logger   *zap.Logger
	// write is WriteFlush; a test makes it lose an acknowledgement.
	write func(ctx context.Context, pool *pgxpool.Pool, id string, b Batch) (bool, error)

	mu          sync.Mutex // one flush at a time; guards the fields below
	pending     *batch     // a batch not known to be written
	failing     bool
	failedSince time.Time
	failures    int
	lastPrune   time.Time

	startOnce, stopOnce sync.Once
	cancel              context.CancelFunc // ends the loop's in-flight flush
	stop, done          chan struct{}
	started             chan struct{} // closed by Start
}

// NewFlusher returns a Flusher of m's counts into pool every interval
// (DefaultFlushInterval when <= 0). A nil logger logs nothing.
func NewFlusher(m *Meter, pool *pgxpool.Pool, interval time.Duration, logger *zap.Logger) *Flusher {
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Flusher{
		meter: m, pool: pool, interval: interval, logger: logger, write: WriteFlush,
		timeout: max(2*interval, 5*time.Second),
		stop:    make(chan struct{}), done: make(chan struct{}), started: make(chan struct{}),
	}
}

// WithOperations makes f flush ops too, in the same batches as the
// minute counts (docs/design.md D70); call it before Start. It returns f.
func (f *Flusher) WithOperations(ops *OperationMeter) *Flusher {
	f.ops = ops
	return f
}

// WithCrossings makes f write the quota crossings c holds in the same
// batches (docs/design.md D81); call it before Start. It returns f.
func (f *Flusher) WithCrossings(c *CrossingMeter) *Flusher {
	f.cross = c
	return f
}

// Start runs the flush loop in a goroutine: every interval a flush, and about
// every PruneEvery (the first time on the first successful flush) a prune.
// Calls after the first do nothing.
func (f *Flusher) Start() {
	f.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		f.cancel = cancel
		close(f.started)
		go f.loop(ctx)
	})
}

func (f *Flusher) loop(ctx context.Context) {
	defer close(f.done)
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		fctx, cancel := context.WithTimeout(ctx, f.timeout)
		if f.FlushNow(fctx) == nil {
			f.maybePrune(fctx)
		}
		cancel()
	}
}

// Stop ends the loop (cancelling a flush in flight, whose batch is kept) and
// flushes the kept batch and what the Meter holds, within ctx. Counts added after
// Stop stay in the Meter. Calls after the first only flush again.
func (f *Flusher) Stop(ctx context.Context) error {
	f.stopOnce.Do(func() {
		close(f.stop)
		select {
		case <-f.started:
			f.cancel()
			select {
			case <-f.done:
			case <-ctx.Done():
			}
		default: // never started
		}
	})
	return f.FlushNow(ctx)
}

// batch is rows written, or retried, under one id.
type batch struct {
	id string
	Batch
}

// drain takes what the meters hold.
func (f *Flusher) drain() Batch {
	b := Batch{Rows: f.meter.Drain()}
	if f.ops != nil {
		b.Operations, b.Records = f.ops.Drain()
	}
	if f.cross != nil {
		b.Crossings = f.cross.Drain()
	}
	return b
}

// FlushNow writes the batch a failed flush kept, if any, then what the Meter
// holds, as a new batch; on failure the batch is kept for the next flush and
// the error returned. The first failure of an outage is logged (warn), and so
// is the recovery (info).
func (f *Flusher) FlushNow(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// two rounds: the batch an outage kept, then the counts added meanwhile
	for range 2 {
		if f.pending == nil {
			b := f.drain()
			if b.empty() {
				return nil
			}
			f.pending = &batch{id: NewBatchID(), Batch: b}
		}
		if _, err := f.write(ctx, f.pool, f.pending.id, f.pending.Batch); err != nil {
			f.failures++
			if !f.failing {
				f.failing, f.failedSince = true, time.Now()
				f.logger.Warn("usage: flush to PostgreSQL failed; counts kept in memory and retried every interval",
					zap.String("error", describe(err)), zap.Int("rows", len(f.pending.Rows)), zap.Int("operation_rows", len(f.pending.Operations)),
					zap.Duration("interval", f.interval), zap.Int64("dropped_total", f.meter.Dropped()))
			}
			return err
		}
		rows := len(f.pending.Rows)
		f.pending = nil
		if f.failing {
			f.logger.Info("usage: flush to PostgreSQL recovered",
				zap.Duration("outage", time.Since(f.failedSince).Round(time.Millisecond)),
				zap.Int("failed_flushes", f.failures), zap.Int("rows", rows),
				zap.Int64("dropped_total", f.meter.Dropped()))
			f.failing, f.failures = false, 0
		}
	}
	return nil
}

func (f *Flusher) maybePrune(ctx context.Context) {
	f.mu.Lock()
	now := time.Now()
	due := f.lastPrune.IsZero() || now.Sub(f.lastPrune) >= PruneEvery
	if due {
		f.lastPrune = now // a failed prune waits for the next hour too
	}
	f.mu.Unlock()
	if !due {
		return
	}
	if err := Prune(ctx, f.pool, now); err != nil {
		f.logger.Warn("usage: prune failed; retried in an hour", zap.String("error", describe(err)))
	}
}

// describe is err for a log line, without what a connection error carries
// about the DSN (user, database): only its innermost cause.
func describe(err error) string {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	cause := error(ce)
	for u := errors.Unwrap(cause); u != nil; u = errors.Unwrap(cause) {
		cause = u
	}
	if cause == error(ce) {
		return "cannot connect to PostgreSQL"
	}
	return "cannot connect to PostgreSQL: " + cause.Error()
}
