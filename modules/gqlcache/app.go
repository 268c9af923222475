// Package gqlcache is the graphql_cache Caddy app and handler: a response
// cache for GraphQL queries (and plain GETs) that a change feed keeps exact,
// and the admin API that purges it (README.md).
package gqlcache

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	caddy.RegisterModule(App{})
	caddy.RegisterModule(Handler{})
	caddy.RegisterModule(AdminAPI{})
}

// instances holds the live caches by configuration, so that a `caddy
// reload` with the same app configuration keeps the store, the tag
// generations and the listener, while a changed one starts afresh.
var instances = caddy.NewUsagePool()

// Defaults of the app's bounds.
const (
	defaultMaxBytes      = 64 << 20
	defaultMaxEntryBytes = 1 << 20
	// DefaultChannel is the channel every change feed writer NOTIFYs in the
	// transaction that adds change events (modules/contract/changefeed.go).
	DefaultChannel = contract.ChangeEventsChannel
)

// App is the graphql_cache global option: the store every graphql_cache
// handler shares, and the worker that invalidates it from a change feed.
type App struct {
	// Bound on the bytes of all entries (default 64MiB); the least recently
	// used are evicted beyond it.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Bound on one response's body (default 1MiB); a larger one is not stored.
	MaxEntryBytes int64 `json:"max_entry_bytes,omitempty"`
	// Invalidation from PostgreSQL notifications (none: TTL and the admin
	// purge only).
	Invalidate *InvalidateConfig `json:"invalidate,omitempty"`
	// Shared second tier in Redis (requires Invalidate with a Feed).
	Shared *SharedConfig `json:"shared,omitempty"`

	inst    *instance
	poolKey string
}

// InvalidateConfig is `invalidate postgres <dsn> { channel …; feed … }`.
type InvalidateConfig struct {
	// DSN of the database, usually {env.DATABASE_URL}.
	Postgres string `json:"postgres,omitempty"`
	// Channel to LISTEN on (default civicgate_change_events).
	Channel string `json:"channel,omitempty"`
	// Change feed table (e.g. change_events): on each notification the
	// families of its rows past the cursor are invalidated. Without it the
	// payload is the comma-separated tags (empty: flush everything).
	Feed string `json:"feed,omitempty"`
}

// SharedConfig is `shared redis [<url>] { key_prefix …; timeout …; the
// redis block's options }`.
type SharedConfig struct {
	// The connection: "redis" is the URL (redis://, rediss://, unix://;
	// standalone, Sentinel or Cluster, docs/redis.md), usually
	// {env.REDIS_URL}; addrs, mode, master_name, username, password, tls …
	// sit beside it.
	redisconn.Config
	// Prefix of every key (default civicgate:cache:).
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Bound on each Redis call (default 50ms); beyond it, a miss.
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "graphql_cache", New: func() caddy.Module { return new(App) }}
}

// identifier is a table or channel name, optionally schema-qualified.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// Provision validates the configuration and loads (or shares) the cache
// instance. It connects to nothing: the listener starts in Start.
func (a *App) Provision(ctx caddy.Context) error {
	if a.MaxBytes == 0 {
		a.MaxBytes = defaultMaxBytes
	}
	if a.MaxEntryBytes == 0 {
		a.MaxEntryBytes = min(defaultMaxEntryBytes, a.MaxBytes)
	}
	if a.MaxBytes < 0 || a.MaxEntryBytes < 0 || a.MaxEntryBytes > a.MaxBytes {
		return fmt.Errorf("graphql_cache: max_entry_bytes (%d) must be positive and at most max_bytes (%d)", a.MaxEntryBytes, a.MaxBytes)
	}
	var lc *listenConfig
	if inv := a.Invalidate; inv != nil {
		dsn := caddy.NewReplacer().ReplaceKnown(inv.Postgres, "")
		if dsn == "" {
			return fmt.Errorf("graphql_cache: invalidate postgres %q resolved to an empty DSN", inv.Postgres)
		}
		channel := inv.Channel
		if channel == "" {
			channel = DefaultChannel
		}
		if !identifier.MatchString(channel) || (inv.Feed != "" && !identifier.MatchString(inv.Feed)) {
			return fmt.Errorf("graphql_cache: invalidate channel %q and feed %q must be SQL identifiers", channel, inv.Feed)
		}
		lc = &listenConfig{dsn: dsn, channel: channel, feed: inv.Feed}
	}
	sc, err := a.sharedOptions(lc)
	if err != nil {
		return err
	}
	a.poolKey = fmt.Sprintf("%d|%d|%v", a.MaxBytes, a.MaxEntryBytes, lc != nil)
	if lc != nil {
		a.poolKey += fmt.Sprintf("|%q|%q|%q", lc.dsn, lc.channel, lc.feed)
	}
	if sc != nil {
		a.poolKey += fmt.Sprintf("|%q|%q|%s", sc.target.Key(), sc.prefix, sc.timeout)
	}
	var rep *redisconn.Reporter
	if sc != nil {
		if rep, err = redisconn.NewReporter(reporterComponent, ctx.GetMetricsRegistry(), ctx.Logger()); err != nil {
			return fmt.Errorf("graphql_cache: metrics: %w", err)
		}
	}
	v, _, err := instances.LoadOrNew(a.poolKey, func() (caddy.Destructor, error) {
		in := newInstance(a.MaxBytes, a.MaxEntryBytes, lc)
		if sc != nil {
			in.shared = openShared(sc, rep)
		}
		return in, nil
	})
	if err != nil {
		return fmt.Errorf("graphql_cache: %w", err)
	}
	a.inst = v.(*instance)
	m, err := newMetrics(ctx.GetMetricsRegistry())
	if err != nil {
		return fmt.Errorf("graphql_cache: metrics: %w", err)
	}
	a.inst.store.metrics.Store(m)
	a.inst.logger.Store(ctx.Logger())
	if a.inst.shared != nil {
		a.inst.shared.reporter.Store(rep)
	}
	if lc == nil {
		m.listenerUp.Set(1)
	} else if a.inst.up.Load() {
		m.listenerUp.Set(1)
	}
	return nil
}

// Start starts the invalidation listener (once per instance: it outlives
// reloads that keep the same configuration, so that they keep the store).
func (a *App) Start() error {
	a.inst.start()
	return nil
}

// Stop is a no-op: the listener stops with the instance, when the last
// configuration using it is cleaned up (Cleanup, Destruct).
func (a *App) Stop() error { return nil }

// Cleanup releases this configuration's use of the instance.
func (a *App) Cleanup() error {
	if a.poolKey == "" {
		return nil
	}
	_, err := instances.Delete(a.poolKey)
	return err
}

// instance is one cache: its store, the misses in flight, and the
// invalidation listener.
type instance struct {
	store    *store
	flights  flights
	maxEntry int64
	listen   *listenConfig // nil: no listener
	shared   *shared       // nil: memory only
	idlePing time.Duration // quiet time before the listener pings its connection
	pings    atomic.Int64  // pings that succeeded

	up      atomic.Bool // the listener is listening (see listening)
	logger  atomic.Pointer[zap.Logger]
	startMu sync.Mutex
	cancel  context.CancelFunc // the listener's, once started
	done    chan struct{}

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced on every listener event (tests await it)
}

func newInstance(maxBytes, maxEntry int64, lc *listenConfig) *instance {
	in := &instance{store: newStore(maxBytes), maxEntry: maxEntry, listen: lc, idlePing: idlePing,
		changed: make(chan struct{})}
	in.logger.Store(zap.NewNop())
	in.flights.joined = in.signal
	return in
}

// listening reports whether hits may be served and misses stored: always
// without a listener, else only while it listens.
func (in *instance) listening() bool { return in.listen == nil || in.up.Load() }

// start starts the listener once.
func (in *instance) start() {
	in.startMu.Lock()
	defer in.startMu.Unlock()
	if in.listen == nil || in.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel, in.done = cancel, make(chan struct{})
	go func() {
		defer close(in.done)
		in.run(ctx)
	}()
}

// Destruct stops the listener (the last configuration using it is gone).
func (in *instance) Destruct() error {
	in.startMu.Lock()
	defer in.startMu.Unlock()
	if in.cancel != nil {
		in.cancel()
		<-in.done
	}
	if in.shared != nil {
		return in.shared.client.Close()
	}
	return nil
}

// signal wakes whoever awaits a listener event.
func (in *instance) signal() {
	in.changedMu.Lock()
	close(in.changed)
	in.changed = make(chan struct{})
	in.changedMu.Unlock()
}

// changes returns a channel closed at the next listener event.
func (in *instance) changes() <-chan struct{} {
	in.changedMu.Lock()
	defer in.changedMu.Unlock()
	return in.changed
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
	_ caddy.Destructor   = (*instance)(nil)
)
