package ratelimit

import (
	"hash/maphash"
	"sync"
)

// Leases (docs/design.md D26). A Redis round trip may take more units than
// the request needs; the instance spends the rest locally, without Redis.
// Redis records a lease as an entry stamped at its end (granted + ttl), so
// every unit of it counts, in every window, as if it had been spent as late
// as the lease allows: leases never let a window hold more than its quota,
// across any number of instances. The cost is under-admission: a lease's
// unspent units are held from other instances. The instance settles a lease
// on its next round trip for the key (the one that renews it): Redis gives
// the unspent units back and restamps the spent ones at the last spend.
// What stays unsettled — an instance's last lease for a key, or one lost to
// a concurrent renewal, a restart or an outage — holds at most one lease
// (≤ lease × quota) per instance until it leaves the window.

// leaseCache holds, per store key, what this instance may decide without
// Redis: refusals until the retry time Redis gave, and an open lease.
type leaseCache struct {
	seed   maphash.Seed
	max    int
	shards [shardCount]leaseShard
}

type leaseShard struct {
	mu      sync.Mutex
	entries map[string]*leaseEntry
}

// leaseEntry is one store key's local state. Times are µs on the local clock.
type leaseEntry struct {
	blockedUntil int64 // refuse a need of blockedNeed before this (other needs free up at other times)
	blockedNeed  int64
	id           uint64 // open lease (0: none)
	tokens       int64  // its unspent units
	sent         int64  // when its round trip started
	deadline     int64  // spend before this (sent + ttl)
	lastSpend    int64
	n            int
	remaining    [maxRates]int64 // Redis' remaining per policy after the lease
	resetAt      [maxRates]int64
}

// settlement is what an instance reports about its lease when it goes back
// to Redis: the lease, its unspent units, and µs from the lease's round trip
// to its last spend (an upper bound of the Redis-clock time from grant to
// last spend, so restamping at grant + spentAfter stays conservative).
type settlement struct {
	id         uint64
	unspent    int64
	spentAfter int64
}

func newLeaseCache(maxKeys int) *leaseCache {
	c := &leaseCache{seed: maphash.MakeSeed(), max: max(1, maxKeys/shardCount)}
	for i := range c.shards {
		c.shards[i].entries = make(map[string]*leaseEntry)
	}
	return c
}

func (c *leaseCache) shard(key string) *leaseShard {
	return &c.shards[maphash.String(c.seed, key)%shardCount]
}

// take answers from the cache if it can (ok): a refusal while the key is
// known to be over its limit for need (Redis' refusal of that need; other
// instances can only push it later, and settling their leases only frees
// units early: exact or conservative), or need units of an open lease. If it
// cannot, it closes the key's open lease and returns its settlement for the
// round trip the caller makes. It does not allocate.
func (c *leaseCache) take(key string, now, need int64) (d decision, s settlement, ok bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.entries[key]
	if e == nil {
		return decision{}, settlement{}, false
	}
	if now < e.blockedUntil && need == e.blockedNeed {
		d = decision{retryAfter: e.blockedUntil - now, n: e.n}
		e.fill(&d, now, 0)
		return d, settlement{}, true
	}
	if e.id != 0 && e.tokens >= need && now < e.deadline {
		e.tokens -= need
		e.lastSpend = now
		d = decision{granted: need, n: e.n}
		e.fill(&d, now, e.tokens)
		return d, settlement{}, true
	}
	if e.id != 0 {
		s = settlement{id: e.id, unspent: e.tokens, spentAfter: max(0, e.lastSpend-e.sent)}
		e.id, e.tokens = 0, 0
	}
	if e.blockedUntil <= now {
		delete(sh.entries, key)
	}
	return decision{}, s, false
}

// fill sets d's per-policy remaining (Redis' plus extra unspent units of
// this instance) and reset.
func (e *leaseEntry) fill(d *decision, now, extra int64) {
	for i := 0; i < e.n; i++ {
		d.remaining[i] = max(0, e.remaining[i]) + extra
		d.resetAfter[i] = max(0, e.resetAt[i]-now)
	}
}

// record stores what a Redis decision d, asked for need units at sent (µs),
// means for later local decisions: a refusal until its retry time, or an
// open lease of d.granted-need units (id, spend before sent+ttl). A lease
// with no units left is kept too, so that the next round trip settles it
// (restamps it at its grant instead of its end).
func (c *leaseCache) record(key string, sent, need int64, d decision, id uint64, ttl int64) {
	refused := d.granted == 0 && d.retryAfter > 0
	leased := d.granted >= need && d.granted > 0 && id != 0
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.entries[key]
	if !refused && !leased {
		if e != nil && d.granted > 0 {
			// units were granted: a refusal cached for another need may now
			// free up later than it said
			e.blockedUntil, e.blockedNeed = 0, 0
		}
		return
	}
	if e == nil {
		if len(sh.entries) >= c.max {
			sh.evict(sent, c.max)
		}
		e = new(leaseEntry)
		sh.entries[key] = e
	}
	e.n = d.n
	for i := 0; i < d.n; i++ {
		e.remaining[i] = d.remaining[i]
		e.resetAt[i] = sent + d.resetAfter[i]
	}
	if refused {
		e.blockedUntil, e.blockedNeed = sent+d.retryAfter, need
		return
	}
	// A lease this instance opened concurrently is dropped here: its unspent
	// units stay counted until they leave the window (under-admission only).
	e.blockedUntil, e.blockedNeed = 0, 0
	e.id, e.tokens, e.sent, e.deadline, e.lastSpend = id, d.granted-need, sent, sent+ttl, sent
}

func (sh *leaseShard) evict(now int64, limit int) {
	for k, e := range sh.entries {
		if e.blockedUntil <= now && (e.id == 0 || e.deadline <= now) {
			delete(sh.entries, k)
		}
	}
	for k := range sh.entries {
		if len(sh.entries) < limit {
			return
		}
		delete(sh.entries, k)
	}
}
