// Package delivery is the webhook sidecar's engine: it fans change events out
// into deliveries, leases due deliveries (shared safely by any number of
// instances, fairly across organizations), POSTs them signed per Standard
// Webhooks v1, and records each outcome with the retry schedule of docs/design.md
// D15. What an organization may receive is decided by the store against the
// key store at fan-out and claim (Config.Tiers); a reconcile loop parks,
// resumes and cancels deliveries when the key store NOTIFYs a change. Time
// comes from an injectable Clock and jitter from an injectable source, so the
// schedule is testable without waiting.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/webhooks/egress"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// Schedule returns the delay before each attempt (docs/design.md D15): attempt 1
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
	// SetAside counts an endpoint set aside as unusable, by kind: secret,
	// url or organization (store.Kind*).
	SetAside(kind string)
}

type noMetrics struct{}

func (noMetrics) Delivery(string)               {}
func (noMetrics) Attempt(string, time.Duration) {}
func (noMetrics) Lag(int64, time.Duration)      {}
func (noMetrics) SetAside(string)               {}

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
	MaxInFlight int // per endpoint, across instances (default 4)
	Workers     int // concurrent attempts of this instance (default 16)
	// MaxInFlightPerOrg bounds the attempts in flight per organization,
	// across instances (default max(1, Workers/2); below Workers when Workers
	// is 2 or more), so one organization's slow receivers cannot take every
	// worker.
	MaxInFlightPerOrg int
	// Tiers maps each tier to its families (required: with none, nothing
	// would be entitled to anything).
	Tiers store.Tiers
	Batch int           // events per fan-out transaction (default 500)
	Poll  time.Duration // idle wait between polls (default 1s)
	// Retention: finished deliveries older than this are pruned (0 = keep).
	Retention time.Duration
	Logger    *zap.Logger
	Metrics   Metrics
	// Render turns an event into a body (default store.RenderEnvelope).
	Render func(store.Event) ([]byte, error)
	// CheckURL is the egress URL rule (egress.Policy.CheckURL): an endpoint
	// whose stored URL it refuses at claim is set aside (docs/design.md D39).
	// Nil: URLs are checked only at dial time.
	CheckURL func(url string) error
	// TracerProvider, when it records (internal/telemetry.Setup with tracing on), makes a webhook.deliver
	// span per attempt linked to the event's writer span, and sends its traceparent to the receiver; the
	// store must then read traceparents (store.ReadTraceparents). Nil: no tracing.
	TracerProvider trace.TracerProvider
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
	if cfg.MaxInFlightPerOrg <= 0 {
		cfg.MaxInFlightPerOrg = max(1, cfg.Workers/2)
	}
	if cfg.Workers >= 2 && cfg.MaxInFlightPerOrg >= cfg.Workers {
		return nil, fmt.Errorf("delivery: max_in_flight_per_org %d must be below workers %d (one organization could take every worker)",
			cfg.MaxInFlightPerOrg, cfg.Workers)
	}
	if len(cfg.Tiers) == 0 {
		return nil, errors.New("delivery: no tiers (the tier map decides what each organization may receive)")
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
		n, err := d.cfg.Store.FanOut(ctx, d.cfg.Clock.Now(), d.cfg.Batch, d.cfg.Tiers)
		total += n
		if err != nil || n < d.cfg.Batch {
			return total, err
		}
	}
	return total, ctx.Err()
}

// Reconcile parks, resumes and cancels deliveries as the key store now says
// (store.Reconcile), logging what it changed.
func (d *Dispatcher) Reconcile(ctx context.Context) (store.Reconciled, error) {
	r, err := d.cfg.Store.Reconcile(ctx, d.cfg.Clock.Now(), d.cfg.Tiers)
	for _, u := range r.SetAside {
		d.setAside(u)
	}
	if err == nil && r.Changed() {
		d.cfg.Logger.Info("webhook deliveries follow the key store", zap.Int64("parked", r.Parked),
			zap.Int64("resumed", r.Resumed), zap.Int64("cancelled", r.Cancelled))
	}
	return r, err
}

// RunOnce fans out, reconciles with the key store, claims what is due (at
// most Workers attempts) and performs the attempts, returning when all are
// recorded. It returns the number of attempts made. Tests drive the engine
// with it under a fake clock.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	if _, err := d.FanOut(ctx); err != nil {
		return 0, err
	}
	if _, err := d.Reconcile(ctx); err != nil {
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
	return d.cfg.Store.Claim(ctx, d.cfg.Clock.Now(), store.ClaimParams{Lease: d.cfg.Lease, MaxInFlight: d.cfg.MaxInFlight,
		MaxInFlightPerOrg: d.cfg.MaxInFlightPerOrg, Limit: limit, Tiers: d.cfg.Tiers, CheckURL: d.cfg.CheckURL,
		SetAside: d.setAside}, d.cfg.Render)
}

// setAside counts and logs an endpoint the store set aside (or deferred):
// its id and reason, never its secret.
func (d *Dispatcher) setAside(u store.SetAside) {
	if u.Deferred {
		d.cfg.Logger.Warn("webhook endpoint secret sealed after this process checked its sealing key cannot be opened; "+
			"its deliveries wait (does another instance hold a newer secret_key?)",
			zap.String("endpoint_id", u.EndpointID), zap.Duration("retry_in", time.Minute))
		return
	}
	fields := []zap.Field{zap.String("endpoint_id", u.EndpointID), zap.String("reason", u.Reason),
		zap.Int64("deliveries_failed", u.Failed)}
	if u.Detail != "" {
		fields = append(fields, zap.String("detail", u.Detail))
	}
	if !u.Marked { // unusable already: a ping sent to it meanwhile
		d.cfg.Logger.Info("delivery to an unusable webhook endpoint failed", fields...)
		return
	}
	d.cfg.Metrics.SetAside(u.Kind)
	d.cfg.Logger.Error("webhook endpoint set aside as unusable; its deliveries failed, other endpoints are not affected", fields...)
}
