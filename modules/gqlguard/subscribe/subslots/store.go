// Package subslots bounds the subscriptions open per API key across gateway
// instances: each open subscription holds a lease in Redis, one sorted set
// per key (member: instance id and lease number; score: expiry, in Redis
// server time), and each instance's heartbeat extends the leases it holds.
// A crashed instance's leases expire; a Redis that does not answer admits
// on the caller's per-instance bound (docs/redis.md "Subscription slots").
package subslots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// DefaultPrefix prefixes the Redis keys.
	DefaultPrefix = "civicgate:"
	// DefaultTTL is how long a lease lives without a heartbeat.
	DefaultTTL = 30 * time.Second
	// DefaultTimeout bounds one Acquire or Release: a subscribe never waits
	// longer for Redis.
	DefaultTimeout = 250 * time.Millisecond
	// downFor is how long Acquire admits on the local bound without asking
	// Redis after a failed call, so an outage costs one timeout per second,
	// not one per subscribe.
	downFor = time.Second
	// refreshChunk is the most members one refresh script call extends.
	refreshChunk = 500
)

// acquire drops the key's expired leases and adds one if fewer than max
// remain. KEYS[1] the set; ARGV max, ttl (ms), member. Returns 1 or 0.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`)

// refreshScript sets the expiry of the members given to now + ttl, adding
// those missing (a lease admitted while Redis was down, or lost with a
// restarted Redis: the set counts what is open). KEYS[1] the set; ARGV ttl
// (ms), members.
var refreshScript = redis.NewScript(`
local t = redis.call('TIME')
local exp = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], exp, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return #ARGV - 1
`)

// Config is a Store's connection and timing.
type Config struct {
	// Client is the Redis connection (standalone, Sentinel or Cluster); the
	// Store does not close it.
	Client redis.UniversalClient
	// Prefix prefixes the keys (default DefaultPrefix); no braces.
	Prefix string
	// TTL is a lease's life without a heartbeat (default DefaultTTL).
	TTL time.Duration
	// Refresh is the heartbeat interval (default TTL/3); less than TTL.
	Refresh time.Duration
	// Timeout bounds one Acquire or Release call (default DefaultTimeout).
	Timeout time.Duration
	// OnError is told of every failed Redis call (nil: nothing).
	OnError func(err error, op string)
	// Leases, when set, follows the number of leases held; Fallbacks, when
	// set, counts subscriptions admitted without Redis.
	Leases    Gauge
	Fallbacks Counter
}

// Gauge and Counter are what the store reports into (a Prometheus gauge and
// counter satisfy them); the package stays free of the host's metrics library.
type (
	Gauge interface {
		Inc()
		Dec()
		Sub(float64)
	}
	Counter interface{ Inc() }
)

// Lease is one held slot; the zero Lease holds nothing.
type Lease struct{ set, member string }

// Store holds one instance's leases and runs its heartbeat until Close.
type Store struct {
	cfg      Config
	instance string
	seq      atomic.Uint64
	// downUntil (unix ns): until then Acquire admits without asking Redis.
	downUntil atomic.Int64

	mu   sync.Mutex
	held map[string]map[string]struct{} // set key → members held

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New checks cfg, fills its defaults and starts the heartbeat.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("subslots: no Redis client")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("subslots: key prefix %q must not contain braces (they would change the Cluster hash tag)", cfg.Prefix)
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = cfg.TTL / 3
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.TTL < time.Millisecond || cfg.Refresh <= 0 || cfg.Refresh >= cfg.TTL || cfg.Timeout < 0 {
		return nil, fmt.Errorf("subslots: want 0 < refresh (%s) < ttl (%s) and ttl ≥ 1ms", cfg.Refresh, cfg.TTL)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("subslots: instance id: %w", err)
	}
	s := &Store{cfg: cfg, instance: hex.EncodeToString(id[:]), held: make(map[string]map[string]struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.heartbeat()
	return s, nil
}

// Scripts are the scripts to load when warming the client.
func Scripts() []*redis.Script { return []*redis.Script{acquireScript, refreshScript} }

// Acquire takes a lease on one of key's max slots. It reports false when
// max leases of key are held across all instances. When Redis fails (or
// failed less than a second ago) it admits — the caller's per-instance bound
// still applies — and keeps the lease, which the next heartbeat writes once
// Redis answers again.
func (s *Store) Acquire(key string, max int) (Lease, bool) {
	l := Lease{set: setKey(s.cfg.Prefix, key), member: s.instance + ":" + strconv.FormatUint(s.seq.Add(1), 36)}
	if time.Now().UnixNano() < s.downUntil.Load() {
		return s.fallback(l), true
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	ok, err := acquireScript.Run(ctx, s.cfg.Client, []string{l.set}, max, s.cfg.TTL.Milliseconds(), l.member).Int()
	if err != nil {
		s.failed(err, "acquire")
		return s.fallback(l), true
	}
	if ok != 1 {
		return Lease{}, false
	}
	s.hold(l)
	return l, true
}

// Release gives l back. A failed call leaves the lease in Redis until its
// TTL passes (it is no longer refreshed).
func (s *Store) Release(l Lease) {
	if !s.drop(l) {
		return
	}
	if time.Now().UnixNano() < s.downUntil.Load() {
		return // not refreshed any more: it expires
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := s.cfg.Client.ZRem(ctx, l.set, l.member).Err(); err != nil {
		s.failed(err, "release")
	}
}

// Held is the number of leases this Store holds.
func (s *Store) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.held {
		n += len(m)
	}
	return n
}

// Close stops the heartbeat and gives back every lease still held (one
// pipeline); later Releases do nothing. Safe to call twice.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		held := s.held
		s.held = make(map[string]map[string]struct{})
		s.mu.Unlock()
		n := 0
		// a short wait: what Redis does not get back expires with its TTL
		ctx, cancel := context.WithTimeout(context.Background(), max(s.cfg.Timeout, time.Second))
		defer cancel()
		_, err := s.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for set, members := range held {
				n += len(members)
				args := make([]any, 0, len(members))
				for m := range members {
					args = append(args, m)
				}
				p.ZRem(ctx, set, args...)
			}
			return nil
		})
		if s.cfg.Leases != nil {
			s.cfg.Leases.Sub(float64(n))
		}
		if err != nil && n > 0 {
			s.failed(err, "close")
		}
	})
}

func (s *Store) fallback(l Lease) Lease {
	if s.cfg.Fallbacks != nil {
		s.cfg.Fallbacks.Inc()
	}
	s.hold(l)
	return l
}

func (s *Store) hold(l Lease) {
	s.mu.Lock()
	m := s.held[l.set]
	if m == nil {
		m = make(map[string]struct{})
		s.held[l.set] = m
	}
	m[l.member] = struct{}{}
	s.mu.Unlock()
	if s.cfg.Leases != nil {
		s.cfg.Leases.Inc()
	}
}

// drop forgets l; it reports whether l was held.
func (s *Store) drop(l Lease) bool {
	s.mu.Lock()
	m := s.held[l.set]
	_, ok := m[l.member]
	if ok {
		delete(m, l.member)
		if len(m) == 0 {
			delete(s.held, l.set)
		}
	}
	s.mu.Unlock()
	if ok && s.cfg.Leases != nil {
		s.cfg.Leases.Dec()
	}
	return ok
}

func (s *Store) failed(err error, op string) {
	if errors.Is(err, redis.Nil) {
		return
	}
	s.downUntil.Store(time.Now().Add(downFor).UnixNano())
	if s.cfg.OnError != nil {
		s.cfg.OnError(err, op)
	}
}
