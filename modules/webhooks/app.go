// Package webhooks is civicgate's diff-webhook module (docs/design.md D14, D15): the
// Caddy app civic_webhooks (the delivery sidecar: fan-out, signed delivery,
// retries, leases shared by every instance) and the HTTP handler
// http.handlers.civic_webhooks (the change feed and webhook-endpoint API,
// placed behind civic_auth and civic_rate_limit). It works with any backend
// that writes the documented change_events table (see package store). See
// README.md.
package webhooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/modules/webhooks/delivery"
	"github.com/civicgate/civicgate/modules/webhooks/egress"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func init() {
	caddy.RegisterModule(App{})
}

// Defaults of the civic_webhooks app.
const (
	DefaultTimeout         = 15 * time.Second
	DefaultWorkers         = 16
	DefaultMaxInFlight     = 4
	DefaultPoll            = time.Second
	DefaultBatch           = 500
	DefaultRotationOverlap = 24 * time.Hour
	DefaultMaxConns        = 8
	DefaultRetention       = 30 * 24 * time.Hour
	DefaultNoticeInterval  = time.Minute
)

// App is the civic_webhooks Caddy app: the database, the secret sealing key,
// the SSRF policy and (unless deliver is off) the delivery sidecar. The
// civic_webhooks handler uses it for the API.
type App struct {
	// Database is the PostgreSQL DSN holding change_events and the
	// civicgate.webhook_* tables (use {env.DATABASE_URL}).
	Database string `json:"database"`
	// SecretKeys is the key material sealing endpoint secrets at rest (≥ 32
	// bytes each, from {env.*}); the first non-empty one seals, all open
	// (rotation); ones that resolve to "" are skipped.
	SecretKeys []string `json:"secret_keys"`
	// Deliver runs the sidecar in this process (default true). Set false on
	// gateways that only serve the API when separate sidecars deliver.
	Deliver *bool `json:"deliver,omitempty"`
	// Workers bounds this instance's concurrent attempts (default 16).
	Workers int `json:"workers,omitempty"`
	// MaxInFlight bounds the attempts in flight per endpoint across every
	// instance (default 4).
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// MaxInFlightPerOrg bounds the attempts in flight per organization
	// across every instance (default max(1, workers/2); must be below
	// workers), so one organization's slow receivers cannot take every worker.
	MaxInFlightPerOrg int `json:"max_in_flight_per_org,omitempty"`
	// Tiers maps a tier name to its rate and families: the same tier lines
	// as civic_auth (the rate is not used here). Required when delivering:
	// an organization receives the families of the tiers of its active keys.
	Tiers map[string]TierConfig `json:"tiers,omitempty"`
	// EventFamilies are the families the backend writes change events for,
	// in the order the API and console list them. Empty: every family a
	// tier names but ManageFamily, sorted (docs/design.md D72).
	EventFamilies []string `json:"event_families,omitempty"`
	// Timeout bounds one attempt (default 15s).
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Poll is the idle wait between polls of the outbox (default 1s).
	Poll caddy.Duration `json:"poll_interval,omitempty"`
	// Batch is the number of events per fan-out transaction (default 500).
	Batch int `json:"batch,omitempty"`
	// RotationOverlap is how long a rotated-out secret still signs (default 24h).
	RotationOverlap caddy.Duration `json:"rotation_overlap,omitempty"`
	// Retention is how long finished (delivered or dead-lettered) deliveries
	// are kept for the deliveries list (default 720h = 30 days).
	Retention caddy.Duration `json:"retention,omitempty"`
	// NoticeInterval is how often the sidecar looks for deprecated schema
	// coordinates an organization's keys use that it was not yet notified of
	// (default 1m; docs/design.md D79).
	NoticeInterval caddy.Duration `json:"notice_interval,omitempty"`
	// InsecureAllowLoopback (development only) lets endpoints target loopback
	// addresses, over plain http too — never Caddy's admin endpoint. Never in
	// production.
	InsecureAllowLoopback bool `json:"insecure_allow_loopback,omitempty"`
	// InsecureAllowLoopbackTargets (development only) lets endpoints target
	// exactly these loopback host:port pairs ("127.0.0.1:9999", "[::1]:9999",
	// "localhost:9999"), over plain http too.
	InsecureAllowLoopbackTargets []string `json:"insecure_allow_loopback_targets,omitempty"`

	eventFamilies []string // EventFamilies, or derived from Tiers (Provision)
	policy        egress.Policy
	overlap       time.Duration
	pool          *pgxpool.Pool
	store         *store.Store
	dispatcher    *delivery.Dispatcher
	notices       *noticer // nil when not delivering
	metrics       *metrics
	logger        *zap.Logger
	// stopTracing flushes and stops this instance's tracer provider (nil when not delivering).
	stopTracing func(context.Context) error

	cancel context.CancelFunc
	done   chan struct{}
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "civic_webhooks", New: func() caddy.Module { return new(App) }}
}

// Provision validates the configuration, resolves {env.*} placeholders and
// builds the (lazily connecting) pool, the store and the dispatcher.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	repl := caddy.NewReplacer()
	dsn := repl.ReplaceAll(a.Database, "")
	if dsn == "" {
		return errors.New("civic_webhooks: database is empty (set it from an {env.*} placeholder)")
	}
	if len(a.SecretKeys) == 0 {
		return errors.New("civic_webhooks: secret_key is required (≥ 32 bytes, from an {env.*} placeholder)")
	}
	// Placeholders that resolve to nothing are skipped: the first non-empty
	// material seals, every non-empty one opens (so a fallback can be listed
	// after an optional variable, as Caddyfile.local does).
	materials := make([][]byte, 0, len(a.SecretKeys))
	for _, k := range a.SecretKeys {
		if m := repl.ReplaceAll(k, ""); m != "" {
			materials = append(materials, []byte(m))
		}
	}
	if len(materials) == 0 {
		return errors.New("civic_webhooks: secret_key resolves to nothing (set it from an {env.*} placeholder, ≥ 32 bytes)")
	}
	box, err := secretbox.New(materials...)
	if err != nil {
		return fmt.Errorf("civic_webhooks: secret_key: %w", err)
	}
	if a.Workers < 0 || a.MaxInFlight < 0 || a.MaxInFlightPerOrg < 0 || a.Batch < 0 || a.Timeout < 0 || a.Poll < 0 ||
		a.RotationOverlap < 0 || a.Retention < 0 || a.NoticeInterval < 0 {
		return errors.New("civic_webhooks: negative setting")
	}
	workers := cmp.Or(a.Workers, DefaultWorkers)
	perOrg := cmp.Or(a.MaxInFlightPerOrg, max(1, workers/2))
	if workers >= 2 && perOrg >= workers {
		return fmt.Errorf("civic_webhooks: max_in_flight_per_org %d must be below workers %d (one organization could take every worker)",
			perOrg, workers)
	}
	tiers, err := storeTiers(a.Tiers)
	if err != nil {
		return fmt.Errorf("civic_webhooks: %w", err)
	}
	if a.delivers() && len(tiers) == 0 {
		return errNoTiers
	}
	if a.eventFamilies, err = eventFamilies(a.EventFamilies, a.Tiers); err != nil {
		return fmt.Errorf("civic_webhooks: %w", err)
	}
	timeout := cmp.Or(time.Duration(a.Timeout), DefaultTimeout)
	a.overlap = cmp.Or(time.Duration(a.RotationOverlap), DefaultRotationOverlap)
	if a.policy, err = a.egressPolicy(ctx); err != nil {
		return err
	}

	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return errors.New("civic_webhooks: cannot parse the database DSN") // it may hold a password: not echoed
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 5*time.Second {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	cfg.MaxConns = DefaultMaxConns
	if a.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil { // connects lazily
		return fmt.Errorf("civic_webhooks: database: %w", err)
	}
	a.store = store.New(a.pool, box)
	if a.metrics, err = newMetrics(ctx.GetMetricsRegistry()); err != nil {
		return err
	}
	dcfg := delivery.Config{
		Store:             a.store,
		Client:            a.policy.Client(timeout),
		Timeout:           timeout,
		MaxInFlight:       cmp.Or(a.MaxInFlight, DefaultMaxInFlight),
		MaxInFlightPerOrg: perOrg,
		Workers:           workers,
		Batch:             cmp.Or(a.Batch, DefaultBatch),
		Poll:              cmp.Or(time.Duration(a.Poll), DefaultPoll),
		Retention:         cmp.Or(time.Duration(a.Retention), DefaultRetention),
		Logger:            a.logger,
		Metrics:           a.metrics,
		Tiers:             tiers,
		CheckURL: func(u string) error {
			_, err := a.policy.CheckURL(u)
			return err
		},
	}
	if !a.delivers() {
		return nil // an API-only node: no dispatcher (and no tiers needed)
	}
	// Tracing (off unless CIVICGATE_TRACING=on or CIVICGATE_WEBHOOKS_TRACING=on; then the OTEL_* environment):
	// a provider per app instance, flushed in Cleanup, so a reload neither loses nor duplicates it.
	tp, stopTracing, err := telemetry.Setup(ctx, telemetryService)
	if err != nil {
		return fmt.Errorf("civic_webhooks: tracing: %w", err)
	}
	a.stopTracing = stopTracing
	if telemetry.Enabled(tp) {
		dcfg.TracerProvider = tp
		a.store.ReadTraceparents()
	}
	if a.dispatcher, err = delivery.New(dcfg); err != nil {
		return fmt.Errorf("civic_webhooks: %w", err)
	}
	a.notices = &noticer{store: a.store, pool: a.pool, interval: cmp.Or(time.Duration(a.NoticeInterval), DefaultNoticeInterval),
		logger: a.logger, sent: a.metrics.Notice, now: a.now}
	return nil
}

// delivers reports whether this instance runs the sidecar.
func (a *App) delivers() bool { return a.Deliver == nil || *a.Deliver }

// egressPolicy builds the SSRF policy: production unless
// insecure_allow_loopback, and Caddy's admin endpoint denied in every case.
func (a *App) egressPolicy(ctx caddy.Context) (egress.Policy, error) {
	targets, err := parseLoopbackTargets(a.InsecureAllowLoopbackTargets)
	if err != nil {
		return egress.Policy{}, fmt.Errorf("civic_webhooks: %w", err)
	}
	if a.InsecureAllowLoopback && len(targets) > 0 {
		return egress.Policy{}, errors.New("civic_webhooks: insecure_allow_loopback is either on or a list of host:port pairs, not both")
	}
	listens, ok := adminListens(ctx)
	if !ok {
		a.logger.Warn("cannot read Caddy's admin address from this Caddy version; denying only the default one as a webhook target",
			zap.String("default", caddy.DefaultAdminListen))
	}
	deny, err := adminTargets(ctx, listens, interfaceAddrs(), lookupAdminHost)
	if err != nil {
		return egress.Policy{}, fmt.Errorf("civic_webhooks: Caddy's admin endpoint (never a webhook target): %w", err)
	}
	p := egress.Policy{AllowLoopback: a.InsecureAllowLoopback, LoopbackTargets: targets, Deny: deny}
	for _, t := range targets {
		if err := p.CheckAddrPort(t); err != nil {
			return egress.Policy{}, fmt.Errorf("civic_webhooks: insecure_allow_loopback %s is Caddy's admin endpoint", t)
		}
	}
	switch {
	case a.InsecureAllowLoopback:
		a.logger.Warn("insecure_allow_loopback is on: webhook endpoints may target loopback addresses (except Caddy's admin endpoint) over plain http (development only)")
	case len(targets) > 0:
		a.logger.Warn("insecure_allow_loopback: webhook endpoints may target these loopback addresses over plain http (development only)",
			zap.Strings("targets", a.InsecureAllowLoopbackTargets))
	}
	return p, nil
}

func (a *App) now() time.Time { return time.Now() }

// keyCheckTimeout bounds the sealing-key check at start.
const keyCheckTimeout = 5 * time.Second

// Start checks the sealing key against the database's key canary and starts
// the delivery sidecar and its notices (unless deliver is off). A key that cannot open the
// canary refuses the start (docs/design.md D39); a database that cannot be
// asked (away, not migrated) does not: the store checks again before it first
// seals or claims.
func (a *App) Start() error {
	checkCtx, cancelCheck := context.WithTimeout(context.Background(), keyCheckTimeout)
	err := a.store.CheckKey(checkCtx)
	cancelCheck()
	switch {
	case errors.Is(err, store.ErrWrongKey):
		return fmt.Errorf("civic_webhooks: refusing to start: %w: %s", err, store.WrongKeyHint)
	case err != nil:
		a.logger.Warn("civic_webhooks: cannot check the sealing key against the database now; checking again before the first seal or claim",
			zap.Error(err))
	}
	if a.dispatcher == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		var wg sync.WaitGroup
		wg.Go(func() { a.notices.run(ctx) })
		a.dispatcher.Run(ctx)
		wg.Wait()
	}()
	return nil
}

// Stop stops the sidecar (deliveries and notices) after the attempts in
// flight are recorded.
func (a *App) Stop() error {
	if a.cancel != nil {
		a.cancel()
		<-a.done
		a.cancel = nil
	}
	return nil
}

// Cleanup flushes the spans of this instance (5 s at most) and closes the pool.
func (a *App) Cleanup() error {
	if a.stopTracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.stopTracing(ctx); err != nil {
			a.logger.Warn("civic_webhooks: flushing spans failed", zap.Error(err))
		}
		cancel()
		a.stopTracing = nil
	}
	if a.pool != nil {
		a.pool.Close()
	}
	return nil
}

// telemetryService is the service.name of the webhook sidecar's spans (OTEL_SERVICE_NAME overrides it).
const telemetryService = "civicgate-webhooks"

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
