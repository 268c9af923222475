// Package delivery is the webhook sidecar's engine: it fans change events out
// into deliveries, leases due deliveries (shared safely by any number of
// instances), POSTs them signed per Standard Webhooks v1, and records each
// outcome with the retry schedule of DESIGN.md §3.8. Time comes from an
// injectable Clock and jitter from an injectable source, so the schedule is
// testable without waiting.
package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/webhooks/egress"
	"github.com/civicgate/civicgate/modules/webhooks/signature"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// Schedule returns the delay before each attempt (DESIGN.md §3.8): attempt 1
// at once, attempt 10 24 h after attempt 9; after the last, the delivery is
// dead-lettered (still replayable).
func Schedule() []time.Duration {
	return []time.Duration{
		0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
	}
}

// Jitter is the ± fraction applied to every scheduled delay.
const Jitter = 0.20

// MaxRetryAfter caps a receiver's Retry-After.
const MaxRetryAfter = 24 * time.Hour

// Clock tells the time.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Metrics receives the engine's observations (low-cardinality labels only).
type Metrics interface {
	// Delivery counts a finished attempt by outcome: delivered, retry,
	// failed (dead-lettered) or disabled (410).
	Delivery(outcome string)
	// Attempt counts an attempt by result: 2xx, 3xx, 4xx, 5xx, timeout,
	// network, refused (SSRF guard) or pruned (event gone from the feed).
	Attempt(result string, took time.Duration)
	// Lag reports the events not yet fanned out and the age of the oldest
	// pending delivery.
	Lag(events int64, oldest time.Duration)
}

type noMetrics struct{}

func (noMetrics) Delivery(string)               {}
func (noMetrics) Attempt(string, time.Duration) {}
func (noMetrics) Lag(int64, time.Duration)      {}

// DefaultLease is how long a claimed attempt stays this instance's without a
// renewal: after a crash, its attempts are due again within this time.
const DefaultLease = 15 * time.Second

// recordFor bounds how long the outcome of an answered attempt is retried
// while the database is unreachable (the lease is renewed meanwhile).
const recordFor = time.Minute

// Config configures a Dispatcher; zero fields take the defaults.
type Config struct {
	Store  *store.Store
	Client *http.Client // default: egress.Policy{}.Client(Timeout)
	Clock  Clock        // default: the real clock
	// Rand returns a uniform number in [0, 1) for jitter (default math/rand/v2).
	Rand     func() float64
	Schedule []time.Duration // default Schedule()
	Timeout  time.Duration   // one attempt (default 15s)
	// Lease of a claimed attempt (default 15s, at least 300ms). It is renewed
	// every Lease/3 while the attempt runs and its outcome is being recorded,
	// so it bounds how long a crashed instance's attempts wait to be taken
	// over, not how long an attempt may take.
	Lease       time.Duration
	MaxInFlight int           // per endpoint, across instances (default 4)
	Workers     int           // concurrent attempts of this instance (default 16)
	Batch       int           // events per fan-out transaction (default 500)
	Poll        time.Duration // idle wait between polls (default 1s)
	// Retention: finished deliveries older than this are pruned (0 = keep).
	Retention time.Duration
	Logger    *zap.Logger
	Metrics   Metrics
	// Render turns an event into a body (default store.RenderEnvelope).
	Render func(store.Event) ([]byte, error)
}

// Dispatcher runs fan-out and deliveries.
type Dispatcher struct {
	cfg Config
}

// New fills in defaults and returns a dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("delivery: no store")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = egress.Policy{}.Client(cfg.Timeout)
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = Schedule()
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease < 300*time.Millisecond {
		return nil, errors.New("delivery: lease must be at least 300ms")
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 4
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 16
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Render == nil {
		cfg.Render = store.RenderEnvelope
	}
	return &Dispatcher{cfg: cfg}, nil
}

// FanOut consumes new change events into deliveries until caught up (or ctx
// ends); it returns the number of events consumed.
func (d *Dispatcher) FanOut(ctx context.Context) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, err := d.cfg.Store.FanOut(ctx, d.cfg.Clock.Now(), d.cfg.Batch)
		total += n
		if err != nil || n < d.cfg.Batch {
			return total, err
		}
	}
	return total, ctx.Err()
}

// RunOnce fans out, claims what is due (at most Workers attempts) and
// performs the attempts, returning when all are recorded. It returns the
// number of attempts made. Tests drive the engine with it under a fake clock.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	if _, err := d.FanOut(ctx); err != nil {
		return 0, err
	}
	jobs, err := d.claim(ctx, d.cfg.Workers)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.attempt(ctx, ctx, j)
		}()
	}
	wg.Wait()
	return len(jobs), nil
}

func (d *Dispatcher) claim(ctx context.Context, limit int) ([]store.Job, error) {
	return d.cfg.Store.Claim(ctx, d.cfg.Clock.Now(), d.cfg.Lease, d.cfg.MaxInFlight, limit, d.cfg.Render)
}

// Run works until ctx is cancelled. Two loops: the fan-out (which may wait
// for a writer holding the feed lock, so it never delays deliveries) and the
// claimer, which claims as many attempts as there are free workers and polls
// again at once while there is work, when a worker frees up or new events were
// fanned out, and otherwise after Poll. Attempts in flight when ctx ends are
// finished first (each bounded by the timeout) so an answered request is
// recorded as such.
func (d *Dispatcher) Run(ctx context.Context) {
	fanned := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.fanOutLoop(ctx, fanned)
	}()

	slots := make(chan struct{}, d.cfg.Workers)
	freed := make(chan struct{}, d.cfg.Workers)
	attemptCtx := context.WithoutCancel(ctx)
	warn := warnEvery(d.cfg.Logger, time.Minute)
	for ctx.Err() == nil {
		busy := false
		if free := d.cfg.Workers - len(slots); free > 0 {
			jobs, err := d.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				warn("claiming webhook deliveries failed", err)
			}
			for _, j := range jobs {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					d.attempt(attemptCtx, ctx, j)
					<-slots
					select {
					case freed <- struct{}{}:
					default:
					}
				}()
			}
			busy = err == nil && len(jobs) == free
		}
		wait := d.cfg.Poll
		if busy {
			wait = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-freed:
		case <-fanned:
		case <-t.C:
		}
		t.Stop()
	}
}

// Prune deletes finished deliveries older than Retention, in batches.
func (d *Dispatcher) Prune(ctx context.Context) error {
	before := d.cfg.Clock.Now().Add(-d.cfg.Retention)
	for ctx.Err() == nil {
		n, err := d.cfg.Store.Prune(ctx, before, 1000)
		if err != nil || n < 1000 {
			return err
		}
	}
	return ctx.Err()
}

// fanOutLoop fans out every Poll, and at once when a writer NOTIFYs
// store.FeedChannel (reports lag every 5 s), signalling fanned when it
// created work.
func (d *Dispatcher) fanOutLoop(ctx context.Context, fanned chan<- struct{}) {
	warn := warnEvery(d.cfg.Logger, time.Minute)
	notified := make(chan struct{}, 1)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		d.listen(ctx, notified)
	}()
	defer func() { <-listening }()
	var lastLag, lastPrune time.Time
	for ctx.Err() == nil {
		if d.cfg.Retention > 0 && time.Since(lastPrune) >= time.Hour {
			lastPrune = time.Now()
			if err := d.Prune(ctx); err != nil && ctx.Err() == nil {
				warn("pruning finished webhook deliveries failed", err)
			}
		}
		n, err := d.FanOut(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			warn("webhook fan-out failed (has `civicgate webhooks migrate` run?)", err)
		case n > 0:
			select {
			case fanned <- struct{}{}:
			default:
			}
		}
		if time.Since(lastLag) >= 5*time.Second {
			lastLag = time.Now()
			if ev, oldest, err := d.cfg.Store.Lag(ctx, d.cfg.Clock.Now()); err == nil {
				d.cfg.Metrics.Lag(ev, oldest)
			}
		}
		t := time.NewTimer(d.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-notified:
		}
		t.Stop()
	}
}

// listen keeps a LISTEN on store.FeedChannel open until ctx ends, signalling
// notified (coalesced) for each notification. A lost connection is listened
// again after a backoff of 1 s doubling to 30 s; polling goes on meanwhile.
func (d *Dispatcher) listen(ctx context.Context, notified chan<- struct{}) {
	warn := warnEvery(d.cfg.Logger, time.Minute)
	signal := func() {
		select {
		case notified <- struct{}{}:
		default:
		}
	}
	wait := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		// Once listening (again), look at once: events may have come in the gap.
		err := d.cfg.Store.Listen(ctx, signal, signal)
		if ctx.Err() != nil {
			return
		}
		warn("listening for change events failed; polling meanwhile", err)
		if time.Since(start) > time.Minute {
			wait = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, 30*time.Second)
	}
}

// warnEvery returns a logger of warnings that logs at most once per period: a
// database that is down or not migrated fails every poll.
func warnEvery(l *zap.Logger, period time.Duration) func(string, error) {
	var last time.Time
	return func(msg string, err error) {
		if time.Since(last) >= period {
			last = time.Now()
			l.Warn(msg, zap.Error(err))
		}
	}
}

// attempt performs one claimed attempt and records its outcome.
//
// ctx carries the request; stop ends the retries of a failed recording (the
// Run context: a shutdown does not wait for a database that is away).
func (d *Dispatcher) attempt(ctx, stop context.Context, j store.Job) {
	defer d.keepLease(ctx, j)()
	start := time.Now()
	o, result := d.send(ctx, j)
	d.cfg.Metrics.Attempt(result, time.Since(start))
	outcome := o.Status
	switch {
	case o.Disable:
		outcome = "disabled"
	case o.Status == "pending":
		outcome = "retry"
	}
	if err := d.finish(ctx, stop, start, j, o); err != nil {
		d.cfg.Logger.Warn("recording a webhook attempt failed; it will be retried when its lease ends", zap.String("endpoint_id", j.EndpointID),
			zap.Int64("delivery_id", j.DeliveryID), zap.Error(err))
		return
	}
	d.cfg.Metrics.Delivery(outcome)
	if outcome != "delivered" {
		d.cfg.Logger.Info("webhook attempt not delivered", zap.String("endpoint_id", j.EndpointID),
			zap.Int64("delivery_id", j.DeliveryID), zap.String("webhook_id", j.EventID), zap.Int("attempt", j.Attempt),
			zap.String("outcome", outcome), zap.String("reason", o.Error))
	}
}

// keepLease renews j's lease every Lease/3 until the returned function is
// called (it waits for the renewer to stop). A renewal that fails because the
// database is away is tried again at the next tick: while it is away no other
// instance can claim the attempt either. A lost lease ends the renewals.
func (d *Dispatcher) keepLease(ctx context.Context, j store.Job) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := d.cfg.Lease / 3
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, every)
			err := d.cfg.Store.Renew(rctx, j, d.cfg.Clock.Now().Add(d.cfg.Lease))
			rcancel()
			if errors.Is(err, store.ErrLeaseLost) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// finish records an outcome, retrying while the database is unreachable for
// up to recordFor (the lease is renewed meanwhile): an answered request that
// is not recorded would be sent again once the lease runs out.
func (d *Dispatcher) finish(ctx, stop context.Context, claimed time.Time, j store.Job, o store.Outcome) error {
	until := claimed.Add(recordFor)
	wait := 100 * time.Millisecond
	for {
		err := d.cfg.Store.Finish(ctx, d.cfg.Clock.Now(), j, o)
		if err == nil || errors.Is(err, store.ErrLeaseLost) || time.Now().Add(wait).After(until) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-stop.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// send POSTs the attempt and classifies the answer.
func (d *Dispatcher) send(ctx context.Context, j store.Job) (store.Outcome, string) {
	if j.Body == nil {
		return store.Outcome{Status: "failed", Error: "event no longer in the change feed"}, "pruned"
	}
	now := d.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, bytes.NewReader(j.Body))
	if err != nil {
		return d.retry(j, now, 0, "bad URL", 0), "network"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "civicgate-webhooks/1")
	signature.SetHeaders(req.Header, j.Keys, j.EventID, now, j.Body)
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		reason, result := classify(err)
		return d.retry(j, d.cfg.Clock.Now(), 0, reason, 0), result
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	code := resp.StatusCode
	result := strconv.Itoa(code/100) + "xx"
	after := d.cfg.Clock.Now()
	switch {
	case code >= 200 && code < 300:
		return store.Outcome{Status: "delivered", StatusCode: code}, result
	case code == http.StatusGone:
		return store.Outcome{Status: "failed", StatusCode: code, Error: "HTTP 410: endpoint disabled", Disable: true}, result
	}
	ra := parseRetryAfter(resp.Header.Get("Retry-After"), after)
	return d.retry(j, after, code, "HTTP "+strconv.Itoa(code), ra), result
}

// retry schedules the next attempt after a failed one, or dead-letters.
func (d *Dispatcher) retry(j store.Job, now time.Time, code int, reason string, retryAfter time.Duration) store.Outcome {
	o := store.Outcome{StatusCode: code, Error: reason}
	if j.Kind == "test" || j.Attempt >= len(d.cfg.Schedule) {
		o.Status = "failed"
		return o
	}
	delay := d.NextDelay(j.Attempt)
	if retryAfter > delay {
		delay = retryAfter
	}
	o.Status, o.NextAt = "pending", now.Add(delay)
	return o
}

// NextDelay is the jittered delay after failed attempt number attempt
// (1-based): Schedule[attempt] ± 20 %.
func (d *Dispatcher) NextDelay(attempt int) time.Duration {
	base := d.cfg.Schedule[attempt]
	f := 1 - Jitter + 2*Jitter*d.cfg.Rand()
	return time.Duration(float64(base) * f)
}

// parseRetryAfter reads delta-seconds or an HTTP date (RFC 9110 §10.2.3),
// capped at MaxRetryAfter; 0 if absent or unusable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// classify turns a transport error into a short, secret-free reason and a
// metrics result.
func classify(err error) (string, string) {
	var ne net.Error
	switch {
	case egress.Refused(err):
		return "refused by the SSRF guard: " + refusalReason(err), "refused"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout", "timeout"
	default:
		var oe *net.OpError
		if errors.As(err, &oe) {
			return fmt.Sprintf("network error (%s)", oe.Op), "network"
		}
		return "network error", "network"
	}
}

func refusalReason(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if u := errors.Unwrap(e); u == egress.ErrRefused {
			return e.Error()
		}
	}
	return "target refused"
}
