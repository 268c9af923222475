package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"

	"github.com/civicgate/civicgate/modules/contract"
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
// Redis: refusals until the retry time Redis gave, open leases, and what
// Redis last reported (remaining and reset per policy), from which the
// on_store_error local decision starts (docs/design.md D63). It is bounded
// like the memory store (max_keys).
type leaseCache struct {
	seed   maphash.Seed
	max    int
	shards [shardCount]leaseShard
}

type leaseShard struct {
	mu      sync.Mutex
	entries map[string]*leaseEntry
	// trips: per key, this instance's round trips that may lease units
	// and whose answers are not yet recorded (beginTrip … endTrip).
	trips map[string][]chan struct{}
}

// maxOpenLeases is how many leases one instance keeps open per key: requests
// that find the key's leases spent at the same moment each renew, and each
// renewal is kept (and settled later) instead of replacing the others.
const maxOpenLeases = 4

// openLease is one lease an instance holds for a key. Times are µs on the
// local clock.
type openLease struct {
	id        uint64 // 0: slot free
	tokens    int64  // its unspent units
	sent      int64  // when its round trip started
	deadline  int64  // spend before this (sent + ttl)
	lastSpend int64
}

// leaseEntry is one store key's local state. Times are µs on the local clock.
type leaseEntry struct {
	blockedUntil int64 // refuse a need of blockedNeed before this (other needs free up at other times)
	blockedNeed  int64
	leases       [maxOpenLeases]openLease
	// settleLater: leases pushed out of a full leases array, settled by the
	// next round trip with the others
	settleLater [maxOpenLeases]settlement
	nLater      int
	n           int
	remaining   [maxRates]int64 // Redis' remaining per policy in its latest answer
	resetAt     [maxRates]int64
	seq         int64 // that answer's sequence number (redis.go windowScript)
}

// answerPassed reports whether the latest answer's quotas are whole again at
// now: it no longer limits anything, and a Redis sequence that went back
// since (the key expired there) is not older than it.
func (e *leaseEntry) answerPassed(now int64) bool {
	for i := 0; i < e.n; i++ {
		if e.resetAt[i] > now {
			return false
		}
	}
	return true
}

// idle reports whether the entry holds nothing a decision at now would use.
func (e *leaseEntry) idle(now int64) bool {
	return e.blockedUntil <= now && e.unspent(now) == 0 && e.nLater == 0 && e.answerPassed(now)
}

// settlement is what an instance reports about one of its leases when it
// goes back to Redis: the lease, its unspent units, and µs from the lease's
// round trip to its last spend (an upper bound of the Redis-clock time from
// grant to last spend, so restamping at grant + spentAfter stays
// conservative).
type settlement struct {
	id         uint64
	unspent    int64
	spentAfter int64
}

// settlements are the leases a round trip settles.
type settlements struct {
	n    int
	list [2 * maxOpenLeases]settlement
}

func newLeaseCache(maxKeys int) *leaseCache {
	c := &leaseCache{seed: maphash.MakeSeed(), max: max(1, maxKeys/shardCount)}
	for i := range c.shards {
		c.shards[i].entries = make(map[string]*leaseEntry)
		c.shards[i].trips = make(map[string][]chan struct{})
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
// cannot, it closes the key's open leases and returns their settlements for
// the round trip the caller makes. It does not allocate.
func (c *leaseCache) take(key string, now, need int64) (d decision, s settlements, ok bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.entries[key]
	if e == nil {
		return decision{}, settlements{}, false
	}
	// Leased units first: Redis may refuse this instance while it still
	// holds units a concurrent renewal leased (the refusal then counts them
	// as spent); refusing with them unspent would under-admit.
	if d, ok := e.spend(now, need); ok {
		return d, settlements{}, true
	}
	if now < e.blockedUntil && need == e.blockedNeed {
		d = decision{retryAfter: e.blockedUntil - now, n: e.n}
		e.fill(&d, now, 0)
		return d, settlements{}, true
	}
	for i := range e.leases {
		if l := &e.leases[i]; l.id != 0 {
			s.list[s.n] = l.settlement()
			s.n++
			*l = openLease{}
		}
	}
	for _, later := range e.settleLater[:e.nLater] {
		s.list[s.n] = later
		s.n++
	}
	e.nLater = 0
	// The entry stays: its latest answer is where a local decision starts if
	// this round trip fails (lastReport).
	return decision{}, s, false
}

// lastReport fills r with what Redis last reported for key under rates (n 0
// when it never answered for it, or the entry was evicted).
func (c *leaseCache) lastReport(key string, rates []contract.Rate, r *lastReport) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.entries[key]
	if e == nil || e.n != len(rates) {
		return
	}
	r.n = e.n
	for i, rt := range rates {
		r.used[i] = rt.Quota - max(0, e.remaining[i])
		r.until[i] = e.resetAt[i]
	}
}

// spend takes need units of an open lease of key, if one holds them, and
// closes nothing: a round trip Redis refused uses it, since a renewal that
// ran concurrently may have leased this instance the units the refusal
// counted (four requests renewing at once near the quota: the first took the
// last units, the others were refused while they sat unspent here).
func (c *leaseCache) spend(key string, now, need int64) (decision, bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.entries[key]
	if e == nil {
		return decision{}, false
	}
	return e.spend(now, need)
}

// beginTrip registers a round trip for key that asks Redis for a lease. Until
// endTrip, a refusal of this instance for key may be a refusal of units that
// trip's answer, still on its way, leased to this instance: Redis ran the
// leasing call first, the refused one second, and their answers arrived the
// other way round. awaitTrips lets the refused request wait for that answer
// instead of refusing with the units about to be spendable here.
func (c *leaseCache) beginTrip(key string) chan struct{} {
	done := make(chan struct{})
	sh := c.shard(key)
	sh.mu.Lock()
	sh.trips[key] = append(sh.trips[key], done)
	sh.mu.Unlock()
	return done
}

// endTrip ends a trip of beginTrip, after its answer (if any) was recorded.
func (c *leaseCache) endTrip(key string, done chan struct{}) {
	sh := c.shard(key)
	sh.mu.Lock()
	list := sh.trips[key]
	for i, ch := range list {
		if ch == done {
			list[i] = list[len(list)-1]
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(sh.trips, key)
	} else {
		sh.trips[key] = list
	}
	sh.mu.Unlock()
	close(done)
}

// awaitTrips waits until every leasing round trip of key in flight now has
// recorded its answer, or ctx ends, and reports whether there were any. The
// wait is bounded by the store timeout each of those trips runs under.
func (c *leaseCache) awaitTrips(ctx context.Context, key string) bool {
	sh := c.shard(key)
	sh.mu.Lock()
	var buf [maxOpenLeases]chan struct{}
	pending := append(buf[:0], sh.trips[key]...)
	sh.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return len(pending) > 0
		}
	}
	return len(pending) > 0
}

// spend takes need units of the first open lease holding them.
func (e *leaseEntry) spend(now, need int64) (decision, bool) {
	for i := range e.leases {
		l := &e.leases[i]
		if l.id != 0 && l.tokens >= need && now < l.deadline {
			l.tokens -= need
			l.lastSpend = now
			d := decision{granted: need, n: e.n}
			e.fill(&d, now, e.unspent(now)+e.returning())
			return d, true
		}
	}
	return decision{}, false
}

// settlement is what the lease reports when it is closed.
func (l *openLease) settlement() settlement {
	return settlement{id: l.id, unspent: l.tokens, spentAfter: max(0, l.lastSpend-l.sent)}
}

// unspent is the units of the entry's leases still spendable at now.
func (e *leaseEntry) unspent(now int64) int64 {
	var n int64
	for _, l := range e.leases {
		if l.id != 0 && now < l.deadline {
			n += l.tokens
		}
	}
	return n
}

// returning is the unspent units of leases waiting in settleLater: Redis
// still counts them, and the next round trip gives them back.
func (e *leaseEntry) returning() int64 {
	var n int64
	for _, s := range e.settleLater[:e.nLater] {
		n += s.unspent
	}
	return n
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
// means for later local decisions: Redis' remaining and reset, a refusal
// until its retry time, or an open lease of d.granted-need units (id, spend
// before sent+ttl), beside the key's other open leases. A lease
// with no units left is kept too, so that the next round trip settles it
// (restamps it at its grant instead of its end).
func (c *leaseCache) record(key string, sent, need int64, d decision, id uint64, ttl int64) {
	refused := d.granted == 0 && d.retryAfter > 0
	leased := d.granted >= need && d.granted > 0 && id != 0
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.entries[key]
	if e == nil {
		if len(sh.entries) >= c.max {
			sh.evict(sent, c.max)
		}
		e = new(leaseEntry)
		sh.entries[key] = e
	}
	// Redis' remaining already excludes every lease it granted. With leases
	// of this instance renewed concurrently, their answers arrive in any
	// order: keep the answer Redis computed last (the higher seq; an equal
	// seq is the same state). Neither the smaller (a renewal that settled
	// other leases sees more left than one before it: r read 92 of 199) nor
	// the last to arrive (a stale answer read 279 of 199) is right. A seq
	// that went back (the key expired in Redis, or a failover to a replica
	// that had not seen the last grants) is ignored until the answer kept
	// has passed its reset, at most a window later.
	if d.seq >= e.seq || e.answerPassed(sent) {
		e.seq, e.n = d.seq, d.n
		for i := 0; i < d.n; i++ {
			e.remaining[i], e.resetAt[i] = d.remaining[i], sent+d.resetAfter[i]
		}
	}
	if refused {
		e.blockedUntil, e.blockedNeed = sent+d.retryAfter, need
		return
	}
	if d.granted > 0 {
		// units were granted: a refusal cached for another need may now
		// free up later than it said
		e.blockedUntil, e.blockedNeed = 0, 0
	}
	if !leased {
		return
	}
	slot := 0 // a free slot, else the lease closest to its deadline
	for i, l := range e.leases {
		if l.id == 0 {
			slot = i
			break
		}
		if l.deadline < e.leases[slot].deadline {
			slot = i
		}
	}
	// Leases this instance renewed concurrently are all kept; beyond
	// maxOpenLeases the one closest to its deadline stops being spent and is
	// settled by the next round trip. Only beyond that (2 × maxOpenLeases
	// renewals at once) is one dropped, its unspent units then staying
	// counted until they leave the window (under-admission only).
	if old := &e.leases[slot]; old.id != 0 && e.nLater < len(e.settleLater) {
		e.settleLater[e.nLater] = old.settlement()
		e.nLater++
	}
	e.leases[slot] = openLease{id: id, tokens: d.granted - need, sent: sent, deadline: sent + ttl, lastSpend: sent}
}

func (sh *leaseShard) evict(now int64, limit int) {
	for k, e := range sh.entries {
		if e.idle(now) {
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
