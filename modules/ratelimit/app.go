package ratelimit

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

func init() {
	caddy.RegisterModule(App{})
	caddy.RegisterModule(Handler{})
}

// limiters holds the live limiters by configuration, so a `caddy reload`
// with the same store configuration keeps every key's state (and Redis
// connections), while a changed one starts fresh.
var limiters = caddy.NewUsagePool()

// App is the civic_rate_limit global option: the store shared by every
// civic_rate_limit handler (Redis client, circuit breaker, local state).
// With no redis/addrs configured it is an in-memory store.
type App struct {
	// The Redis connection: "redis" (the URL, usually {env.REDIS_URL}),
	// "addrs", "mode", "master_name", "username", "password", "tls" …
	// (internal/redisconn, docs/redis.md). None: an in-memory store.
	redisconn.Config
	// Prefix of every Redis key (default "civicgate:rl:").
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Per-call Redis timeout (default and maximum 50ms).
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// local (default) | open | closed.
	OnStoreError string `json:"on_store_error,omitempty"`
	// Share of a key's quota leased per Redis round trip (default 0.02, max 0.05, 0 = off).
	Lease *float64 `json:"lease,omitempty"`
	// Consecutive failures that open the circuit breaker (default 3).
	BreakerFailures int `json:"breaker_failures,omitempty"`
	// How long the breaker stays open before a probe (default 1s).
	BreakerCooldown caddy.Duration `json:"breaker_cooldown,omitempty"`
	// Bound on keys held in memory (default 1,000,000).
	MaxKeys int `json:"max_keys,omitempty"`
	// Usage counting per key, flushed to PostgreSQL (off without it).
	Usage *UsageConfig `json:"usage,omitempty"`

	limiter *limiter
	poolKey string
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "civic_rate_limit", New: func() caddy.Module { return new(App) }}
}

// Provision validates the configuration and loads (or shares) the limiter.
func (a *App) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	var target *redisconn.Target
	if !a.Config.IsZero() {
		var err error
		if target, err = a.Config.Resolve(repl); err != nil {
			return fmt.Errorf("civic_rate_limit: %w", err)
		}
	}
	if a.KeyPrefix == "" {
		a.KeyPrefix = "civicgate:rl:"
	}
	if strings.ContainsAny(a.KeyPrefix, "{}") {
		return fmt.Errorf("civic_rate_limit: key_prefix must not contain { or } (the key is the Redis hash tag)")
	}
	usageSet, err := a.usageSettings(repl)
	if err != nil {
		return err
	}
	timeout := time.Duration(a.Timeout)
	if timeout == 0 {
		timeout = 50 * time.Millisecond
	}
	if timeout < 0 || timeout > 50*time.Millisecond {
		return fmt.Errorf("civic_rate_limit: timeout %s must be in (0, 50ms]", timeout)
	}
	if a.OnStoreError == "" {
		a.OnStoreError = modeLocal
	}
	switch a.OnStoreError {
	case modeLocal, modeOpen, modeClosed:
	default:
		return fmt.Errorf("civic_rate_limit: on_store_error %q: want local, open or closed", a.OnStoreError)
	}
	share := 0.02
	if a.Lease != nil {
		share = *a.Lease
	}
	if share < 0 || share > 0.05 {
		return fmt.Errorf("civic_rate_limit: lease %v must be in [0, 0.05]", share)
	}
	failures := a.BreakerFailures
	if failures == 0 {
		failures = 3
	}
	cooldown := time.Duration(a.BreakerCooldown)
	if cooldown == 0 {
		cooldown = time.Second
	}
	if failures < 1 || cooldown < 0 {
		return fmt.Errorf("civic_rate_limit: breaker settings must be positive")
	}
	maxKeys := a.MaxKeys
	if maxKeys == 0 {
		maxKeys = 1_000_000
	}
	if maxKeys < 0 {
		return fmt.Errorf("civic_rate_limit: max_keys must be positive")
	}
	redisKey := "memory"
	if target != nil {
		redisKey = target.Key()
	}
	a.poolKey = fmt.Sprintf("%s|%s|%s|%v|%d|%s|%d", redisKey, a.KeyPrefix, timeout, share, failures, cooldown, maxKeys) +
		"|" + a.OnStoreError + fmt.Sprintf("|%q|%s|%d|%t|%d|%d", usageSet.dsn, usageSet.interval, usageSet.cells,
		usageSet.operations, usageSet.opCells, usageSet.opsPerKey)
	reporter, err := redisconn.NewReporter("ratelimit", ctx.GetMetricsRegistry(), ctx.Logger())
	if err != nil {
		return fmt.Errorf("civic_rate_limit: metrics: %w", err)
	}
	val, _, err := limiters.LoadOrNew(a.poolKey, func() (caddy.Destructor, error) {
		var sink *usageSink
		if usageSet.dsn != "" {
			var err error
			if sink, err = newUsageSink(usageSet, ctx.Logger().Named("usage")); err != nil {
				return nil, err
			}
		}
		var client redis.UniversalClient
		if target != nil {
			// one try per decision (the breaker handles outages), each step
			// bounded by the timeout
			client = target.Open(redisconn.Tuning{DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
				MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
			// connected, topology loaded and the script cached before the
			// first request; a failure is logged (warn, with its cause)
			_ = reporter.Warm(ctx, client, target, windowScript)
		}
		l := newLimiter(limiterConfig{redis: client, prefix: a.KeyPrefix, timeout: timeout, mode: a.OnStoreError,
			share: share, failures: failures, cooldown: cooldown, maxKeys: maxKeys})
		l.usage = sink
		return l, nil
	})
	if err != nil {
		return fmt.Errorf("civic_rate_limit: %w", err)
	}
	a.limiter = val.(*limiter)
	m, err := newMetrics(ctx.GetMetricsRegistry())
	if err != nil {
		return fmt.Errorf("civic_rate_limit: metrics: %w", err)
	}
	a.limiter.metrics.Store(m)
	a.limiter.logger.Store(ctx.Logger())
	a.limiter.reporter.Store(reporter)
	return nil
}

// Start starts usage flushing (once per limiter; it outlives reloads). The
// Redis client was connected and warmed when the limiter was made.
func (a *App) Start() error {
	if a.limiter != nil && a.limiter.usage != nil {
		a.limiter.usage.start()
	}
	return nil
}

// usageSettings validates the usage block: the resolved DSN ("" = off), the
// flush interval, the cell bound and the operation counting (on unless
// operations off; docs/design.md D70).
func (a *App) usageSettings(repl *caddy.Replacer) (usageSettings, error) {
	if a.Usage == nil {
		return usageSettings{}, nil
	}
	dsn := repl.ReplaceKnown(a.Usage.Postgres, "")
	if dsn == "" {
		return usageSettings{}, fmt.Errorf("civic_rate_limit: usage needs postgres <dsn> (e.g. {env.DATABASE_URL}), which resolved to empty")
	}
	interval := time.Duration(a.Usage.FlushInterval)
	if interval == 0 {
		interval = 5 * time.Second
	}
	if interval < time.Second || interval > time.Minute {
		return usageSettings{}, fmt.Errorf("civic_rate_limit: usage flush_interval %s must be in [1s, 1m]", interval)
	}
	set := usageSettings{dsn: dsn, interval: interval, cells: cmp.Or(a.Usage.MaxCells, 100_000),
		operations: a.Usage.Operations == nil || *a.Usage.Operations,
		opCells:    cmp.Or(a.Usage.MaxOperations, usage.DefaultMaxOperationCells),
		opsPerKey:  cmp.Or(a.Usage.MaxOperationsPerKey, usage.DefaultMaxOperationsPerKey)}
	if set.cells < 0 || set.opCells < 0 || set.opsPerKey < 0 {
		return usageSettings{}, fmt.Errorf("civic_rate_limit: usage max_cells, max_operations and max_operations_per_key must be positive")
	}
	return set, nil
}

// Stop is a no-op: the limiter outlives the config until Cleanup.
func (a *App) Stop() error { return nil }

// Cleanup releases this configuration's use of the limiter.
func (a *App) Cleanup() error {
	if a.poolKey == "" {
		return nil
	}
	_, err := limiters.Delete(a.poolKey)
	return err
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
	_ caddy.Destructor   = (*limiter)(nil)
)

// limiterConfig is a validated store configuration.
type limiterConfig struct {
	redis    redis.UniversalClient // nil: memory only
	prefix   string
	timeout  time.Duration
	mode     string
	share    float64
	failures int
	cooldown time.Duration
	maxKeys  int
}

func newLimiter(c limiterConfig) *limiter {
	l := &limiter{
		redis:    c.redis,
		prefix:   c.prefix,
		timeout:  c.timeout,
		mode:     c.mode,
		share:    c.share,
		memory:   newMemoryStore(c.maxKeys),
		local:    newLeaseCache(c.maxKeys),
		breaker:  breaker{threshold: int64(c.failures), cooldown: c.cooldown},
		clock:    time.Now,
		maxLease: 1000,
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	l.leaseIDs.Store(binary.LittleEndian.Uint64(seed[:]) >> 1)
	m, _ := newMetrics(nil) // unregistered until a config registers its own
	l.metrics.Store(m)
	r, _ := redisconn.NewReporter("ratelimit", nil, nil)
	l.reporter.Store(r)
	return l
}
