package subscribe

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/collectors"
	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/subslots"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// SharedSlots makes max_per_key hold across gateway instances: every open
// subscription holds a lease in Redis (subslots; docs/redis.md
// "Subscription slots").
type SharedSlots struct {
	// The Redis connection ("redis": a URL, usually {env.REDIS_URL}; the
	// block's fields beside it, docs/redis.md). None: per instance only.
	redisconn.Config
	// KeyPrefix prefixes the Redis keys (default "civicgate:"); the leases
	// of a key are <prefix>subs:{<key id>}.
	KeyPrefix string `json:"key_prefix,omitempty"`
}

// slotsComponent labels the store's Redis errors
// (civicgate_redis_errors_total{component="subslots"}).
const slotsComponent = "subslots"

// slotStores holds the live stores by connection and prefix, so a reload
// with the same settings keeps the store, its leases and its heartbeat; the
// last release closes it (its leases given back).
var slotStores = caddy.NewUsagePool()

// pooledSlots is a store and its client in slotStores.
type pooledSlots struct {
	store    *subslots.Store
	client   redis.UniversalClient
	reporter atomic.Pointer[redisconn.Reporter] // the latest provision's
}

// Destruct gives the leases back and closes the client.
func (p *pooledSlots) Destruct() error {
	p.store.Close()
	return p.client.Close()
}

// keySlots counts the subscriptions open per API key on this instance and,
// with a shared store, holds a lease per subscription there too: a
// subscription needs both, so this instance never exceeds max even when
// Redis does not answer.
type keySlots struct {
	max  int
	mu   sync.Mutex
	open map[string]int

	shared  *subslots.Store // nil: this instance only
	release func()          // gives the pooled store back
}

func newKeySlots(max int) *keySlots {
	return &keySlots{max: max, open: make(map[string]int)}
}

// provisionSlots makes s.slots, sharing a store when subscriptions names a
// Redis.
func (s *Shell) provisionSlots(ctx caddy.Context) error {
	s.slots = newKeySlots(s.maxPerKey())
	c := s.cfg
	if c == nil || c.SharedSlots.Config.IsZero() {
		return nil
	}
	target, err := c.SharedSlots.Config.Resolve(nil)
	if err != nil {
		return fmt.Errorf("subscriptions: %w", err) // redisconn never echoes a password
	}
	prefix := c.KeyPrefix
	if prefix == "" {
		prefix = subslots.DefaultPrefix
	}
	reg := ctx.GetMetricsRegistry()
	rep, err := redisconn.NewReporter(slotsComponent, reg, s.logger)
	if err != nil {
		return fmt.Errorf("subscriptions: metrics: %w", err)
	}
	leases, fallbacks, err := slotMetrics(reg)
	if err != nil {
		return fmt.Errorf("subscriptions: metrics: %w", err)
	}
	key := "subslots:" + target.Key() + "|" + prefix
	val, _, err := slotStores.LoadOrNew(key, func() (caddy.Destructor, error) {
		p := &pooledSlots{client: target.Open(redisconn.Tuning{DialTimeout: subslots.DefaultTimeout,
			ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1, DialerRetries: 1,
			ContextTimeoutEnabled: true})}
		p.reporter.Store(rep)
		store, err := subslots.New(subslots.Config{Client: p.client, Prefix: prefix, Leases: leases, Fallbacks: fallbacks,
			OnError: func(err error, op string) {
				p.reporter.Load().Report(err, "subscription slots: Redis call failed; max_per_key holds per instance meanwhile",
					zap.String("op", op))
				redisconn.ReloadTopology(p.client, err)
			}})
		if err != nil {
			_ = p.client.Close()
			return nil, err
		}
		p.store = store
		_ = rep.Warm(context.Background(), p.client, target, subslots.Scripts()...) // logged; not fatal
		return p, nil
	})
	if err != nil {
		return fmt.Errorf("subscriptions: %w", err)
	}
	p := val.(*pooledSlots)
	p.reporter.Store(rep)
	var once sync.Once
	s.slots.shared = p.store
	s.slots.release = func() { once.Do(func() { _, _ = slotStores.Delete(key) }) }
	return nil
}

// slotMetrics registers the shared store's gauge and fallback counter.
func slotMetrics(reg prometheus.Registerer) (prometheus.Gauge, prometheus.Counter, error) {
	const ns, sub = "civicgate", "graphql_guard"
	leases := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "subscription_leases",
		Help: "Subscription leases this instance holds in Redis (subscriptions { redis … })."})
	fallbacks := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
		Name: "subscription_slot_fallbacks_total",
		Help: "Subscriptions admitted on this instance's max_per_key alone because Redis did not answer."})
	if reg == nil {
		return leases, fallbacks, nil
	}
	var err error
	if leases, err = collectors.Register(reg, leases); err != nil {
		return nil, nil, err
	}
	if fallbacks, err = collectors.Register(reg, fallbacks); err != nil {
		return nil, nil, err
	}
	return leases, fallbacks, nil
}

// close gives the shared store back (Cleanup).
func (k *keySlots) close() {
	if k != nil && k.release != nil {
		k.release()
	}
}

// forKey is the Slots of one connection or stream of key.
func (k *keySlots) forKey(key string) wsproxy.Slots {
	if k.shared == nil {
		return keySlot{k: k, key: key}
	}
	return &sharedSlot{local: keySlot{k: k, key: key}}
}

// keySlot is a key's slots on this instance.
type keySlot struct {
	k   *keySlots
	key string
}

func (s keySlot) Acquire() bool {
	s.k.mu.Lock()
	defer s.k.mu.Unlock()
	if s.k.open[s.key] >= s.k.max {
		return false
	}
	s.k.open[s.key]++
	return true
}

func (s keySlot) Release() {
	s.k.mu.Lock()
	defer s.k.mu.Unlock()
	if n := s.k.open[s.key]; n <= 1 {
		delete(s.k.open, s.key)
	} else {
		s.k.open[s.key] = n - 1
	}
}

// sharedSlot is a key's slots on this instance and in the shared store:
// the leases its Acquires took, given back last first (any lease of the key
// is as good as another).
type sharedSlot struct {
	local  keySlot
	mu     sync.Mutex
	leases []subslots.Lease
}

func (s *sharedSlot) Acquire() bool {
	if !s.local.Acquire() {
		return false
	}
	l, ok := s.local.k.shared.Acquire(s.local.key, s.local.k.max)
	if !ok {
		s.local.Release()
		return false
	}
	s.mu.Lock()
	s.leases = append(s.leases, l)
	s.mu.Unlock()
	return true
}

func (s *sharedSlot) Release() {
	s.mu.Lock()
	n := len(s.leases)
	if n == 0 {
		s.mu.Unlock()
		return
	}
	l := s.leases[n-1]
	s.leases = s.leases[:n-1]
	s.mu.Unlock()
	s.local.k.shared.Release(l)
	s.local.Release()
}
