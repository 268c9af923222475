package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	caddy.RegisterModule(App{})
}

// Defaults of the civic_auth app.
const (
	DefaultIdentityTTL      = 30 * time.Second
	DefaultCacheTTL         = time.Second
	DefaultNegativeCacheTTL = time.Second
	DefaultCacheSize        = 100_000
	DefaultLookupTimeout    = 2 * time.Second
	// DefaultNegativeCacheSize bounds the unknown hashes remembered.
	DefaultNegativeCacheSize = 10_000
	// DefaultFailedLookups is the per-client limit on lookups of unknown keys:
	// a burst of 60, then one a second, so one bad key retried in a loop (one
	// lookup per default negative_cache_ttl) never trips it.
	DefaultFailedLookups = "60/m"
	// DefaultFailedLookupClients bounds the client addresses tracked for it.
	DefaultFailedLookupClients = 65_536
)

// App is the civic_auth Caddy app: the tier policy (written once), the key
// store, the lookup cache and the LISTEN worker that invalidates it. Handlers
// (http.handlers.civic_auth) use it.
type App struct {
	// Keys says where keys live.
	Keys KeysConfig `json:"keys"`
	// Environment is this gateway's environment, "live" or "test".
	Environment string `json:"environment"`
	// IdentitySecret signs X-Civic-Identity (≥ 32 bytes; use {env.X}).
	IdentitySecret string `json:"identity_secret"`
	// IdentityTTL is the assertion lifetime (≤ 60s, default 30s).
	IdentityTTL caddy.Duration `json:"identity_ttl,omitempty"`
	// CacheTTL is how long a known key is trusted without the store (default 1s).
	CacheTTL caddy.Duration `json:"cache_ttl,omitempty"`
	// NegativeCacheTTL is how long an unknown hash is remembered (default 1s).
	NegativeCacheTTL caddy.Duration `json:"negative_cache_ttl,omitempty"`
	// CacheSize bounds the number of cached known keys (default 100000).
	CacheSize int `json:"cache_size,omitempty"`
	// NegativeCacheSize bounds the number of cached unknown hashes, held
	// apart from known keys so they never evict one (default 10000).
	NegativeCacheSize int `json:"negative_cache_size,omitempty"`
	// FailedLookups limits, per client address, the lookups of keys that turn
	// out unknown: a rate (contract.ParseRate: N/s, N/m, N/h, N/d, N/<duration>;
	// a burst of N, then N per window), or "off" (default 60/m). Over it, keys not cached as known get 429
	// without a lookup.
	FailedLookups string `json:"failed_lookups,omitempty"`
	// FailedLookupClients bounds the client addresses tracked for
	// FailedLookups; the least recently seen is dropped (default 65536).
	FailedLookupClients int `json:"failed_lookup_clients,omitempty"`
	// LookupTimeout bounds one store lookup (default 2s).
	LookupTimeout caddy.Duration `json:"lookup_timeout,omitempty"`
	// WatchInterval is how often the credentials of open long-lived
	// exchanges (contract.Watcher) are looked up again when no key change
	// notification asked for it (default 1s).
	WatchInterval caddy.Duration `json:"watch_interval,omitempty"`
	// Tiers maps a tier name to its rates, cost budget and families.
	Tiers map[string]TierConfig `json:"tiers,omitempty"`
	// JWT admits access tokens from the team's identity provider beside
	// API keys (jwt.go, docs/identity.md); nil: API keys only.
	JWT *JWTConfig `json:"jwt,omitempty"`

	secret  []byte
	idTTL   time.Duration
	timeout time.Duration
	dsn     string
	tiers   map[string]*tierPolicy
	cache   *keyCache
	flight  *singleflight.Group // one store lookup per hash at a time
	failed  *failLimiter        // nil with failed_lookups off
	store   store
	pool    *pgxpool.Pool
	// files is the keys-file store (nil with postgres), polled every
	// filePoll by a worker of Start (filestore.go).
	files    *fileStore
	filePoll time.Duration
	metrics  *authMetrics
	logger   *zap.Logger
	// tokens is the access-token path (tokens.go); nil without JWT.
	tokens *tokenAuth
	// challenge is every 401's WWW-Authenticate value but a token
	// refusal's (read-only, shared).
	challenge []string

	watches       *watchRegistry
	watchInterval time.Duration
	recheckFlight *singleflight.Group // one recheck lookup per hash at a time

	cancel context.CancelFunc
	done   chan struct{} // closed when the workers (LISTEN, recheck) have ended
	// listens counts the LISTENs started (tests await the first).
	listens *atomic.Int64
	// clock is the time a key's deadlines (rotation overlap, expiry) are
	// compared with; nil: time.Now. Set at Provision from clockOverride.
	clock func() time.Time
}

// clockOverride, when set, is the clock of every App provisioned after it
// (the tests of a key's expiry through Caddy move it instead of sleeping).
var clockOverride atomic.Pointer[func() time.Time]

// now is the app's clock.
func (a *App) now() time.Time {
	if a.clock != nil {
		return a.clock()
	}
	return time.Now()
}

// KeysConfig selects the key store.
type KeysConfig struct {
	// Source is "postgres" or "file".
	Source string `json:"source"`
	// DSN is the PostgreSQL connection string (source postgres).
	DSN string `json:"dsn,omitempty"`
	// File is the hashed keys file (source file).
	File string `json:"file,omitempty"`
}

// TierConfig is one tier's policy (a tier line, tiers.go).
type TierConfig struct {
	// Rate is the tier's rate list (contract.ParseRates: one to
	// contract.MaxRatesPerTier rates, comma- or space-separated, each window
	// once), e.g. "100/m" or "100/m,20000/d"; published as {civic.rate} in
	// contract.Rates' form.
	Rate string `json:"rate"`
	// CostBudget is the tier's GraphQL cost budget, points per window
	// (contract.ParseRate, e.g. "50000/h"); published as {civic.cost_budget}
	// ("" when empty).
	CostBudget string `json:"cost_budget,omitempty"`
	// Families the tier is entitled to, published as {civic.families}.
	Families []string `json:"families,omitempty"`
}

// store is where lookups go on a cache miss.
type store interface {
	lookup(ctx context.Context, h keystore.Hash) (keystore.Record, error)
}

type pgStore struct{ pool *pgxpool.Pool }

func (s pgStore) lookup(ctx context.Context, h keystore.Hash) (keystore.Record, error) {
	return keystore.Lookup(ctx, s.pool, h)
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "civic_auth", New: func() caddy.Module { return new(App) }}
}

var familyRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Provision validates the configuration, resolves {env.*} placeholders and
// builds the cache and the (lazily connecting) store.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	a.listens = new(atomic.Int64)
	if c := clockOverride.Load(); c != nil {
		a.clock = *c
	}
	var err error
	repl := caddy.NewReplacer()
	a.secret = []byte(repl.ReplaceAll(a.IdentitySecret, ""))
	if len(a.secret) < contract.IdentityMinSecretLen {
		return fmt.Errorf("civic_auth: identity_secret must be at least %d bytes (set it from an {env.*} placeholder)", contract.IdentityMinSecretLen)
	}
	if !keystore.ValidEnv(a.Environment) {
		return fmt.Errorf("civic_auth: environment %q must be live or test", a.Environment)
	}
	// A setting unset or below zero (the JSON config allows one) is the default: cmp.Or of the setting
	// clamped at zero.
	a.idTTL = cmp.Or(max(time.Duration(a.IdentityTTL), 0), DefaultIdentityTTL)
	if a.idTTL > contract.IdentityMaxTTL {
		return fmt.Errorf("civic_auth: identity_ttl %s over %s", a.idTTL, contract.IdentityMaxTTL)
	}
	a.timeout = cmp.Or(max(time.Duration(a.LookupTimeout), 0), DefaultLookupTimeout)
	a.cache = newKeyCache(cmp.Or(max(a.CacheSize, 0), DefaultCacheSize), cmp.Or(max(a.NegativeCacheSize, 0), DefaultNegativeCacheSize),
		cmp.Or(max(time.Duration(a.CacheTTL), 0), DefaultCacheTTL), cmp.Or(max(time.Duration(a.NegativeCacheTTL), 0), DefaultNegativeCacheTTL))
	a.flight = new(singleflight.Group)
	if a.failed, err = newFailLimiter(a.FailedLookups, cmp.Or(max(a.FailedLookupClients, 0), DefaultFailedLookupClients)); err != nil {
		return fmt.Errorf("civic_auth: %w", err)
	}

	if len(a.Tiers) == 0 {
		return errors.New("civic_auth: no tier configured")
	}
	a.tiers = make(map[string]*tierPolicy, len(a.Tiers))
	for name, tc := range a.Tiers {
		if !keystore.ValidTier(name) {
			return fmt.Errorf("civic_auth: bad tier name %q", name)
		}
		if a.tiers[name], err = newTierPolicy(name, tc); err != nil {
			return fmt.Errorf("civic_auth: %w", err)
		}
	}

	if a.metrics, err = newAuthMetrics(ctx.GetMetricsRegistry()); err != nil {
		return err
	}
	a.watches = newWatchRegistry(a.metrics.watches)
	a.watchInterval = cmp.Or(max(time.Duration(a.WatchInterval), 0), DefaultWatchInterval)
	a.recheckFlight = new(singleflight.Group)

	switch a.Keys.Source {
	case "postgres":
		a.dsn = repl.ReplaceAll(a.Keys.DSN, "")
		if a.dsn == "" {
			return errors.New("civic_auth: keys postgres: empty DSN")
		}
		cfg, err := pgxpool.ParseConfig(a.dsn)
		if err != nil {
			return errors.New("civic_auth: keys postgres: cannot parse the DSN") // the DSN may hold a password: not echoed
		}
		if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > a.timeout {
			cfg.ConnConfig.ConnectTimeout = a.timeout
		}
		cfg.MaxConns = 8
		if a.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil { // connects lazily
			return fmt.Errorf("civic_auth: keys postgres: %w", err)
		}
		a.store = pgStore{a.pool}
	case "file":
		if a.files, err = openFileStore(repl.ReplaceAll(a.Keys.File, "")); err != nil {
			return fmt.Errorf("civic_auth: %w", err)
		}
		if a.filePoll <= 0 {
			a.filePoll = DefaultFilePoll
		}
		a.store = a.files
	default:
		return fmt.Errorf("civic_auth: keys source %q must be postgres or file", a.Keys.Source)
	}
	a.challenge = challenge
	if err := a.provisionTokens(ctx, repl); err != nil {
		return err
	}
	if a.tokens != nil {
		a.challenge = a.tokens.plain
	}
	return nil
}

// Start starts the workers: the recheck of watched credentials and, with the
// postgres store, the LISTEN worker, with the file store the poll of the
// keys file.
func (a *App) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.done = make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { a.watchLoop(ctx) })
	if a.pool != nil {
		wg.Go(func() { a.listen(ctx) })
	}
	if a.files != nil {
		wg.Go(func() { a.watchKeysFile(ctx, a.files) })
	}
	if a.tokens != nil && a.pool != nil {
		wg.Go(func() { a.tokens.denialsExpiry(ctx) })
	}
	go func() {
		wg.Wait()
		close(a.done)
	}()
	return nil
}

// Stop stops the workers. Open credential watches stay open and no longer
// fire (the exchanges end with the server).
func (a *App) Stop() error {
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
	return nil
}

// Cleanup closes the pool and the token verifier.
func (a *App) Cleanup() error {
	if a.tokens != nil {
		a.tokens.verifier.Close()
	}
	if a.pool != nil {
		a.pool.Close()
	}
	return nil
}

// listen keeps a LISTEN connection open and invalidates cache entries named by
// notifications. Each time LISTEN starts — the first time too — the whole
// cache is dropped and every watch rechecked, because notifications sent
// before it (a key revoked while the listener was connecting, or down) were
// missed.
func (a *App) listen(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := a.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		a.logger.Warn("key change listener disconnected; retrying", zap.Error(err), zap.Duration("backoff", backoff))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, time.Second)
	}
}

func (a *App) listenOnce(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	conn, err := pgx.Connect(cctx, a.dsn)
	cancel()
	if err != nil {
		return errors.New("connect failed") // pgx errors can include the DSN's host/user; keep it short
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+keystore.Channel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	a.cache.flush()
	a.watches.notifyAll()
	if a.tokens != nil {
		a.tokens.orgs.forget("")
		a.tokens.reloadDenials(ctx)
	}
	a.listens.Add(1)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		a.invalidate(n.Payload)
	}
}

// invalidate drops the cache entries a notification names and asks for a
// recheck of the watched credentials it concerns.
func (a *App) invalidate(payload string) {
	switch {
	case strings.HasPrefix(payload, "key:"):
		h, err := keystore.ParseHash(payload[4:])
		if err != nil {
			a.cache.flush()
			a.watches.notifyAll()
			return
		}
		a.cache.deleteHash(h)
		a.watches.notifyHash(h)
	case strings.HasPrefix(payload, "org:"):
		a.cache.deleteOrg(payload[4:])
		a.watches.notifyOrg(payload[4:])
		if a.tokens != nil {
			a.tokens.orgs.forget("") // keyed by the tokens' claims, which may be the name
			a.tokens.recheck(context.Background())
		}
	case strings.HasPrefix(payload, "deny:"):
		if a.tokens != nil {
			a.tokens.reloadDenials(context.Background())
		}
	default:
		a.cache.flush()
		a.watches.notifyAll()
	}
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
