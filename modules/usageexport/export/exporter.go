package export

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// Defaults of Config (docs/design.md D73).
const (
	DefaultInterval = time.Minute
	// DefaultSettle is how long after an hour ends it is taken as closed:
	// every gateway has flushed it by then. It must be at least twice the
	// usage flush interval (5 s by default): a count made in the hour's last
	// instant is written within one interval, or two when a flush is retried.
	DefaultSettle = 2 * time.Minute
	MinSettle     = 10 * time.Second
	DefaultBatch  = 500
	MaxBatch      = 10000
	DefaultCursor = "default"
	// BatchRetention is how long the record of a delivered batch is kept
	// (the usage hours themselves are kept 90 days).
	BatchRetention = 90 * 24 * time.Hour
	// retry backoff bounds: the first retry after about BackoffBase, each
	// failure doubling it, never more than BackoffMax apart.
	BackoffBase = 2 * time.Second
	BackoffMax  = 5 * time.Minute
)

// Config configures an Exporter.
type Config struct {
	Pool   *pgxpool.Pool // the cursor's database
	Source Source        // the hours to export (required)
	Sink   *Sink
	// EventSource is every event's source attribute (DefaultSource when
	// empty); the same on every gateway.
	EventSource string
	Interval    time.Duration // between runs when caught up; DefaultInterval when 0
	Settle      time.Duration // DefaultSettle when 0
	Batch       int           // events per POST; DefaultBatch when 0
	// Since is the first hour exported when the cursor does not exist yet
	// (zero: the first hour the table holds).
	Since   time.Time
	Cursor  string // the cursor row's name; DefaultCursor when empty
	Metrics *Metrics
	Logger  *zap.Logger
	// Now and After are the clock (tests); nil: time.Now, time.After.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Exporter sends closed hours to the sink, one batch at a time, at least once.
type Exporter struct {
	c        Config
	failures int       // consecutive failed runs
	failedAt time.Time // the first failure of the current outage
}

// New checks c and fills in its defaults.
func New(c Config) (*Exporter, error) {
	if c.Pool == nil || c.Source == nil || c.Sink == nil || c.Sink.URL == "" {
		return nil, errors.New("export: a database, a source and a sink URL are required")
	}
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.Settle = cmp.Or(c.Settle, DefaultSettle)
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.Cursor = cmp.Or(c.Cursor, DefaultCursor)
	if c.Settle < MinSettle {
		return nil, fmt.Errorf("export: settle %s is below %s (twice the usage flush interval)", c.Settle, MinSettle)
	}
	if c.Batch < 1 || c.Batch > MaxBatch {
		return nil, fmt.Errorf("export: batch %d is not from 1 to %d", c.Batch, MaxBatch)
	}
	if c.Sink.Client == nil {
		c.Sink.Client = NewClient(cmp.Or(c.Sink.Timeout, DefaultTimeout))
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	return &Exporter{c: c}, nil
}

// Result is what one run did.
type Result struct {
	Leader bool      // false: another gateway holds the cursor; nothing was done
	Sent   int       // events the sink accepted
	More   bool      // a full batch was sent: more closed hours may be waiting
	Cursor Position  // the cursor after the run
	Closed time.Time // hours starting before this are closed
}

// ClosedBefore is the start of the first hour that is not closed at now:
// an hour is closed once its end plus the settle delay has passed.
func ClosedBefore(now time.Time, settle time.Duration) time.Time {
	return now.Add(-settle).UTC().Truncate(time.Hour)
}

// RunOnce sends the next batch of closed hours, if there is one and no other
// gateway is sending. The cursor row is locked (FOR UPDATE SKIP LOCKED) for
// the whole run and moves only after the sink answered 2xx, in the
// transaction that records the batch; a crash or failed commit after the
// POST sends the same events again, with the same ids.
func (e *Exporter) RunOnce(ctx context.Context, now time.Time) (Result, error) {
	closed := ClosedBefore(now, e.c.Settle)
	res := Result{Closed: closed}
	if _, err := e.c.Pool.Exec(ctx, `INSERT INTO civicgate.usage_export_cursors (name, after_start)
		VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, e.c.Cursor, e.c.Since.UTC().Truncate(time.Hour)); err != nil {
		return res, fmt.Errorf("export: create cursor: %w", err)
	}
	tx, err := e.c.Pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("export: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var cur Position
	err = tx.QueryRow(ctx, `SELECT after_start, after_key FROM civicgate.usage_export_cursors
		WHERE name = $1 FOR UPDATE SKIP LOCKED`, e.c.Cursor).Scan(&cur.Start, &cur.KeyID)
	if errors.Is(err, pgx.ErrNoRows) {
		return res, nil // another gateway is exporting
	}
	if err != nil {
		return res, fmt.Errorf("export: lock cursor: %w", err)
	}
	res.Leader, res.Cursor = true, cur
	hours, err := e.c.Source.Hours(ctx, Page{After: cur, Before: closed, Limit: e.c.Batch})
	if err != nil {
		return res, err
	}
	if len(hours) == 0 {
		// caught up: forget the batch records past BatchRetention
		if _, err := tx.Exec(ctx, `DELETE FROM civicgate.usage_export_batches WHERE cursor_name = $1 AND delivered_at < $2`,
			e.c.Cursor, now.Add(-BatchRetention)); err != nil {
			return res, fmt.Errorf("export: prune batch records: %w", err)
		}
		e.c.Metrics.setLag(now.Sub(closed))
		if err := tx.Commit(ctx); err != nil {
			return res, fmt.Errorf("export: commit: %w", err)
		}
		return res, nil
	}
	events := NewEvents(hours, e.c.EventSource)
	if err := e.c.Sink.Send(ctx, events); err != nil {
		e.c.Metrics.failed()
		return res, err
	}
	first, last := hours[0], hours[len(hours)-1]
	next := Position{Start: last.Start.UTC(), KeyID: last.KeyID}
	if _, err := tx.Exec(ctx, `UPDATE civicgate.usage_export_cursors SET after_start = $2, after_key = $3, updated_at = now()
		WHERE name = $1`, e.c.Cursor, next.Start, next.KeyID); err != nil {
		return res, fmt.Errorf("export: move cursor: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO civicgate.usage_export_batches
		(cursor_name, first_start, first_key, last_start, last_key, events) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (cursor_name, last_start, last_key) DO UPDATE SET events = excluded.events, delivered_at = now()`,
		e.c.Cursor, first.Start, first.KeyID, next.Start, next.KeyID, len(events)); err != nil {
		return res, fmt.Errorf("export: record batch: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("export: commit batch (it will be sent again): %w", err)
	}
	e.c.Metrics.sent(len(events))
	res.Sent, res.Cursor, res.More = len(events), next, len(hours) == e.c.Batch
	if res.More {
		// the last hour sent may have more keys: it is the last hour wholly sent's end
		e.c.Metrics.setLag(now.Sub(next.Start))
	} else {
		e.c.Metrics.setLag(now.Sub(closed))
	}
	return res, nil
}

// Run runs the exporter until ctx ends: a run every Interval, at once again
// after a full batch, and after a failure with exponential backoff and
// jitter (Backoff). The first failure of an outage is logged (warn) and the
// recovery (info), nothing in between; never the URL, the header's value or
// the sink's body.
func (e *Exporter) Run(ctx context.Context) {
	for {
		res, err := e.RunOnce(ctx, e.c.Now())
		if ctx.Err() != nil {
			return
		}
		wait := e.c.Interval
		switch {
		case err != nil:
			e.failures++
			if e.failures == 1 {
				e.failedAt = e.c.Now()
				e.c.Logger.Warn("usage export: delivery failed; the cursor stays and the batch is retried with backoff",
					zap.String("error", describe(err)), zap.Stringer("position", res.Cursor))
			}
			wait = Backoff(e.failures, rand.Float64)
		case e.failures > 0:
			e.c.Logger.Info("usage export: delivery recovered",
				zap.Duration("outage", e.c.Now().Sub(e.failedAt).Round(time.Millisecond)),
				zap.Int("failed_runs", e.failures), zap.Int("sent", res.Sent))
			e.failures = 0
			fallthrough
		default:
			if res.More {
				wait = 0
			}
		}
		if wait == 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-e.c.After(wait):
		}
	}
}

// Backoff is the wait after the n-th consecutive failure (n ≥ 1):
// BackoffBase doubled n-1 times, at most BackoffMax, of which a random half
// (jitter drawn by rnd in [0, 1)), so gateways that failed together do not
// retry together.
func Backoff(n int, rnd func() float64) time.Duration {
	d := BackoffMax
	if n < 20 {
		d = min(BackoffBase<<max(n-1, 0), BackoffMax)
	}
	return d/2 + time.Duration(rnd()*float64(d/2))
}

// String is the position for logs: the hour and key id.
func (p Position) String() string {
	return p.Start.UTC().Format(time.RFC3339) + " " + p.KeyID
}

// describe is err for a log line: a SendError's cause, a PostgreSQL error
// without connection details.
func describe(err error) string {
	var se *SendError
	if errors.As(err, &se) {
		return se.Error()
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return "export: cannot connect to PostgreSQL"
	}
	return err.Error()
}
