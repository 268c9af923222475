package ratelimit

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// Store error modes (on_store_error).
const (
	modeLocal  = "local"  // keep limiting with the same GCRA in memory
	modeOpen   = "open"   // allow (RateLimit-Policy still sent, no RateLimit)
	modeClosed = "closed" // 500 {"error":"Internal Server Error"}
)

// errStoreDown is returned by limiter.take when Redis is unusable and the mode
// is open or closed; the handler decides what to answer.
var errStoreDown = errors.New("ratelimit: store unavailable")

// limiter decides requests for every civic_rate_limit handler sharing one
// configuration. It lives in a caddy.UsagePool so its state survives reloads.
type limiter struct {
	redis    redis.UniversalClient // nil → memory only
	prefix   string
	timeout  time.Duration
	mode     string
	share    float64 // lease share of a key's quota
	memory   *memoryStore
	local    *localCache
	breaker  breaker
	metrics  atomic.Pointer[metrics]
	logger   atomic.Pointer[zap.Logger]
	clock    func() time.Time
	maxLease int64
}

// take decides one request for key under r at the limiter's clock.
func (l *limiter) take(ctx context.Context, key string, r contract.Rate) (decision, error) {
	now := l.clock()
	nowUS := now.UnixMicro()
	interval := emissionInterval(r)
	if l.redis == nil {
		return l.memory.take(key, nowUS, interval, r.Quota, 1), nil
	}
	lease := l.leaseSize(r)
	if d, ok := l.local.take(key, nowUS, lease > 1); ok {
		return d, nil
	}
	if !l.breaker.allow(now) {
		return l.fallback(key, nowUS, interval, r)
	}
	want := max(lease, 1)
	l.metrics.Load().redisCalls.Inc()
	cctx, cancel := context.WithTimeout(ctx, l.timeout)
	d, err := redisTake(cctx, l.redis, l.prefix+key, interval, r.Quota, want)
	cancel()
	if err != nil {
		l.metrics.Load().storeErrors.Inc()
		if l.breaker.failure(l.clock()) {
			l.log().Error("rate limit store unavailable; using on_store_error mode until it recovers",
				zap.String("mode", l.mode), zap.Error(err))
		}
		return l.fallback(key, nowUS, interval, r)
	}
	if l.breaker.success() {
		l.log().Info("rate limit store recovered; shared counting resumed")
	}
	l.local.record(key, nowUS, d, lease > 1, r.Window.Microseconds())
	if d.granted > 1 { // the other leased tokens are this instance's to spend
		d.remaining += d.granted - 1
		d.granted = 1
	}
	return d, nil
}

func (l *limiter) fallback(key string, nowUS, interval int64, r contract.Rate) (decision, error) {
	if l.mode == modeLocal {
		return l.memory.take(key, nowUS, interval, r.Quota, 1), nil
	}
	return decision{}, errStoreDown
}

// leaseSize is how many tokens one Redis round trip fetches for a key of rate
// r: floor(quota*share), but 1 (no leasing) below 2 or above maxLease. See
// README.md "Leasing" for why the error across N instances is at most N*lease.
func (l *limiter) leaseSize(r contract.Rate) int64 {
	n := int64(float64(r.Quota) * l.share)
	if n < 2 {
		return 1
	}
	return min(n, l.maxLease)
}

func (l *limiter) log() *zap.Logger {
	if lg := l.logger.Load(); lg != nil {
		return lg
	}
	return zap.NewNop()
}

// Destruct closes the Redis client (caddy.Destructor, called by the pool
// when the last configuration using this limiter is unloaded).
func (l *limiter) Destruct() error {
	if l.redis != nil {
		return l.redis.Close()
	}
	return nil
}

// breaker is a consecutive-failure circuit breaker with a half-open probe.
type breaker struct {
	threshold int64
	cooldown  time.Duration
	failures  atomic.Int64
	openUntil atomic.Int64 // unix ns; 0 = closed
	probing   atomic.Bool
}

// allow reports whether a call may go to Redis now. While open, one caller
// per cooldown period is let through as the probe.
func (b *breaker) allow(now time.Time) bool {
	until := b.openUntil.Load()
	if until == 0 {
		return true
	}
	if now.UnixNano() < until {
		return false
	}
	return b.probing.CompareAndSwap(false, true)
}

// failure records a failed call; it reports true when the breaker opens from
// closed (the start of an outage: log once).
func (b *breaker) failure(now time.Time) bool {
	wasOpen := b.openUntil.Load() != 0
	n := b.failures.Add(1)
	if wasOpen || n >= b.threshold {
		b.openUntil.Store(now.Add(b.cooldown).UnixNano())
		b.probing.Store(false)
		return !wasOpen
	}
	return false
}

// success records a successful call; it reports true when it closes an open
// breaker (the end of an outage).
func (b *breaker) success() bool {
	b.failures.Store(0)
	if b.openUntil.Load() == 0 {
		return false
	}
	b.openUntil.Store(0)
	b.probing.Store(false)
	return true
}

// localCache holds, per key, what this instance may decide without Redis:
// refusals until the retry time Redis gave (other instances can only move it
// later), and leased tokens already counted in Redis.
type localCache struct {
	seed   maphash.Seed
	max    int
	shards [shardCount]localShard
}

type localShard struct {
	mu      sync.Mutex
	entries map[string]localEntry
}

type localEntry struct {
	blockedUntil int64 // µs; refuse before this
	tokens       int64 // leased tokens left
	leaseUntil   int64 // µs; leased tokens expire then
	remaining    int64 // Redis' remaining after the lease
	resetAt      int64 // µs when Redis' quota is whole again
}

func newLocalCache(maxKeys int) *localCache {
	c := &localCache{seed: maphash.MakeSeed(), max: max(1, maxKeys/shardCount)}
	for i := range c.shards {
		c.shards[i].entries = make(map[string]localEntry)
	}
	return c
}

// take answers from the cache if it can: a refusal while the key is known to
// be over its limit, or a leased token. It does not allocate.
func (c *localCache) take(key string, now int64, leasing bool) (decision, bool) {
	s := &c.shards[maphash.String(c.seed, key)%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return decision{}, false
	}
	if now < e.blockedUntil {
		return decision{resetAfter: max(0, e.resetAt-now), retryAfter: e.blockedUntil - now}, true
	}
	if leasing && e.tokens > 0 && now < e.leaseUntil {
		e.tokens--
		s.entries[key] = e
		return decision{granted: 1, remaining: e.remaining + e.tokens, resetAfter: max(0, e.resetAt-now)}, true
	}
	delete(s.entries, key)
	return decision{}, false
}

// record stores what a Redis decision d at now means for later local
// decisions: a refusal until its retry time, or granted-1 leased tokens.
func (c *localCache) record(key string, now int64, d decision, leasing bool, window int64) {
	var e localEntry
	switch {
	case d.granted == 0:
		e = localEntry{blockedUntil: now + d.retryAfter, resetAt: now + d.resetAfter}
	case leasing && d.granted > 1:
		e = localEntry{tokens: d.granted - 1, leaseUntil: now + window, remaining: d.remaining, resetAt: now + d.resetAfter}
	default:
		return
	}
	s := &c.shards[maphash.String(c.seed, key)%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[key]; !ok && len(s.entries) >= c.max {
		for k, old := range s.entries {
			if old.blockedUntil <= now && old.leaseUntil <= now {
				delete(s.entries, k)
			}
		}
		for k := range s.entries {
			if len(s.entries) < c.max {
				break
			}
			delete(s.entries, k)
		}
	}
	if old, ok := s.entries[key]; ok && e.tokens > 0 && old.tokens > 0 && now < old.leaseUntil {
		e.tokens += old.tokens // a concurrent lease of this instance: keep both
	}
	s.entries[key] = e
}
