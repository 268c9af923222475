package ratelimit

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/redisconn"
)

// Store error modes (on_store_error).
const (
	modeLocal  = "local"  // keep limiting with the same sliding window in memory
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
	local    *leaseCache
	breaker  breaker
	metrics  atomic.Pointer[metrics]
	logger   atomic.Pointer[zap.Logger]
	reporter atomic.Pointer[redisconn.Reporter] // counts and logs every store error
	clock    func() time.Time
	maxLease int64
	// leaseIDs numbers this instance's leases from a random start, so that
	// two instances' ids for one key do not meet.
	leaseIDs atomic.Uint64
	// storeClock: tests only — send the limiter's clock to the script
	// instead of letting Redis read its own (fake-clock tests on real Redis).
	storeClock bool
	// answered: tests only — called with each store answer before it is
	// recorded, to hold one answer back while another arrives.
	answered func(decision)
	usage    *usageSink // nil: usage not counted
}

// take decides need units for key (whose store key under set is storeKey)
// under every policy of set, at the limiter's clock.
func (l *limiter) take(ctx context.Context, set *policySet, storeKey, key string, need int64) (decision, error) {
	now := l.clock()
	d, err := l.decide(ctx, now, set, storeKey, key, need)
	d.at = now.UnixMicro()
	return d, err
}

func (l *limiter) decide(ctx context.Context, now time.Time, set *policySet, storeKey, key string, need int64) (decision, error) {
	nowUS := now.UnixMicro()
	if l.redis == nil {
		return l.memory.take(storeKey, nowUS, set.rates, need, need, nil), nil
	}
	var settle settlements
	if need <= set.minQuota { // more than a whole quota is for the store to refuse
		var d decision
		var ok bool
		if d, settle, ok = l.local.take(storeKey, nowUS, need); ok {
			return d, nil
		}
	}
	if !l.breaker.allow(now) {
		return l.fallback(storeKey, nowUS, set, need)
	}
	call := storeCall{keys: set.redisKeys(l.prefix, key), set: set, need: need, want: need, settle: settle}
	if l.storeClock {
		call.now = nowUS
	}
	var id uint64
	var trip chan struct{}
	if set.lease > need {
		id = l.leaseIDs.Add(1)
		call.want, call.ttl, call.leaseID = set.lease, set.leaseTTL, strconv.FormatUint(id, 36)
		trip = l.local.beginTrip(storeKey)
	}
	l.metrics.Load().redisCalls.Inc()
	cctx, cancel := context.WithTimeout(ctx, l.timeout)
	cctx, span := startSpan(cctx, "civic_rate_limit.redis")
	d, _, err := redisTake(cctx, l.redis, call)
	if span != nil {
		endRedisSpan(span, err)
	}
	cancel()
	if l.answered != nil {
		l.answered(d)
	}
	if err != nil {
		if trip != nil {
			l.local.endTrip(storeKey, trip)
		}
		l.metrics.Load().storeErrors.Inc()
		l.reporter.Load().Report(err, "rate limit store error; this decision used on_store_error mode", zap.String("mode", l.mode))
		redisconn.ReloadTopology(l.redis, err)
		if l.breaker.failure(l.clock()) {
			l.log().Error("rate limit store unavailable; using on_store_error mode until it recovers",
				zap.String("mode", l.mode), zap.Error(err))
		}
		return l.fallback(storeKey, nowUS, set, need)
	}
	if l.breaker.success() {
		l.log().Info("rate limit store recovered; shared counting resumed")
	}
	l.local.record(storeKey, nowUS, need, d, id, call.ttl)
	if trip != nil {
		l.local.endTrip(storeKey, trip)
	}
	if d.granted == 0 && need <= set.minQuota {
		// Refused: units a concurrent renewal of this instance leased meanwhile
		// are ours to spend, including a renewal whose answer is still on its
		// way (beginTrip).
		if ld, ok := l.local.spend(storeKey, nowUS, need); ok {
			return ld, nil
		}
		if l.local.awaitTrips(ctx, storeKey) {
			if ld, ok := l.local.spend(storeKey, l.clock().UnixMicro(), need); ok {
				return ld, nil
			}
		}
	}
	if d.granted > need { // the other leased units are this instance's to spend
		for i := 0; i < d.n; i++ {
			d.remaining[i] += d.granted - need
		}
		d.granted = need
	}
	return d, nil
}

// fallback decides without Redis, by on_store_error. local decides in memory,
// starting from what Redis last reported for the key (docs/design.md D63):
// a key Redis left with r units gets at most r from this gateway until the
// reported reset, so one slow call never hands out a fresh quota.
func (l *limiter) fallback(storeKey string, nowUS int64, set *policySet, need int64) (decision, error) {
	// Counted apart from store errors: while the breaker is open no call
	// fails, yet every decision is made here.
	l.metrics.Load().fallbacks.Inc()
	if l.mode != modeLocal {
		return decision{}, errStoreDown
	}
	var last lastReport
	l.local.lastReport(storeKey, set.rates, &last)
	d := l.memory.take(storeKey, nowUS, set.rates, need, need, &last)
	d.fallback = true
	return d, nil
}

func (l *limiter) log() *zap.Logger {
	if lg := l.logger.Load(); lg != nil {
		return lg
	}
	return zap.NewNop()
}

// Destruct stops usage counting (a last flush) and closes the Redis client
// (caddy.Destructor, called by the pool when the last configuration using
// this limiter is unloaded).
func (l *limiter) Destruct() error {
	var err error
	if l.usage != nil {
		err = l.usage.stop()
	}
	if l.redis != nil {
		err = errors.Join(err, l.redis.Close())
	}
	return err
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
