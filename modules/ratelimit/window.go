// Package ratelimit implements the civic_rate_limit HTTP handler: per-key
// quotas over sliding windows (several per tier, plus a cost budget in
// points), kept in Redis with leases and an in-memory fallback, and usage
// counting per key (docs/design.md D11, D26, D27; headers and bodies:
// docs/api.md "Rate limits").
package ratelimit

import "github.com/civicgate/civicgate/modules/contract"

// The sliding-window log (docs/design.md D26). For a policy q/w, a decision
// at time now admits n units only if the units admitted with a stamp in
// (now-w, now] plus n stay within q, for every policy of the tier at once; a
// refused decision records nothing. So no window of length w ever holds more
// than q admitted units, and a fresh key may still spend its whole q at once.
//
// The log is bucketed to bound its size: a window has bucketsPerWindow
// buckets of width w/bucketsPerWindow; units admitted in one bucket are kept
// as one entry stamped with the latest admission in it. Merging only moves
// stamps later, so units are counted up to one bucket width longer than
// they were admitted (never shorter): the bound above holds exactly, and a
// unit frees up at most w/64 late (≈ 0.9 s for a minute window). All times
// are microseconds. The Lua script in redis.go is the same computation, plus
// leases.

// bucketsPerWindow is how finely a window's log is kept.
const bucketsPerWindow = 64

// maxRates is contract.MaxRatesPerTier: the policies one decision checks.
const maxRates = contract.MaxRatesPerTier

// granularity is the bucket width of a window (µs, ≥ 1).
func granularity(window int64) int64 { return max(1, window/bucketsPerWindow) }

// logEntry is one bucket: count units, the latest admitted at stamp.
type logEntry struct{ stamp, count int64 }

// policyLog is one policy's log for one key, entries in ascending stamp
// order, one per bucket.
type policyLog struct{ entries []logEntry }

// live drops the entries that left the window at now and returns the sum
// of the others and the latest stamp (0 if none). It keeps the slice's
// storage, so a busy key does not allocate.
func (p *policyLog) live(now, window int64) (sum, last int64) {
	i := 0
	for i < len(p.entries) && p.entries[i].stamp+window <= now {
		i++
	}
	if i > 0 {
		p.entries = append(p.entries[:0], p.entries[i:]...)
	}
	for _, e := range p.entries {
		sum += e.count
		last = max(last, e.stamp)
	}
	return sum, last
}

// add records n units admitted at stamp, merging into the last bucket when
// stamp falls in it (or before it: a clock stepping back), keeping the later
// stamp.
func (p *policyLog) add(stamp, n, gran int64) {
	if k := len(p.entries); k > 0 {
		e := &p.entries[k-1]
		if stamp/gran <= e.stamp/gran {
			e.count += n
			e.stamp = max(e.stamp, stamp)
			return
		}
	}
	p.entries = append(p.entries, logEntry{stamp: stamp, count: n})
}

// wait is how long after now need more units fit under quota, given the
// live sum (which counts seed): 0 if they fit now, -1 if need exceeds the
// whole quota (never). seed (count 0: none) is one more entry, taken in its
// stamp's order among the log's.
func (p *policyLog) wait(now, window, sum, need, quota int64, seed logEntry) int64 {
	if need > quota {
		return -1
	}
	excess := sum + need - quota
	if excess <= 0 {
		return 0
	}
	pending := seed.count > 0
	for _, e := range p.entries {
		if pending && seed.stamp <= e.stamp {
			pending = false
			if excess -= seed.count; excess <= 0 {
				return seed.stamp + window - now
			}
		}
		if excess -= e.count; excess <= 0 {
			return e.stamp + window - now
		}
	}
	if pending {
		if excess -= seed.count; excess <= 0 {
			return seed.stamp + window - now
		}
	}
	return window // not reached: the entries and seed hold sum
}

// lastReport is what Redis last reported for a key, per policy, for the
// on_store_error local decision (docs/design.md D63): the units it counted
// (quota − remaining) and when its quota is whole again (µs, local clock).
// n 0: Redis never answered for the key (or this gateway forgot it).
type lastReport struct {
	n     int
	used  [maxRates]int64
	until [maxRates]int64
}

// seed is policy i's report as one log entry that leaves the window at the
// reported reset (count 0 when there is none, or it has passed at now).
func (r *lastReport) seed(i int, now, window int64) logEntry {
	if r == nil || i >= r.n || r.until[i] <= now || r.used[i] <= 0 {
		return logEntry{}
	}
	return logEntry{stamp: r.until[i] - window, count: r.used[i]}
}

// decision is the outcome of one rate-limit decision over a tier's policies.
type decision struct {
	granted int64 // units granted (0 = refused)
	// retryAfter: refused, µs until the units asked for fit under every
	// policy (if nothing else is admitted meanwhile); -1: never (more than a
	// whole quota).
	retryAfter int64
	n          int // policies decided
	// per policy: units still available right after this decision, and µs
	// until the policy's quota is whole again (its last entry leaves the window)
	remaining  [maxRates]int64
	resetAfter [maxRates]int64
	// at is when the limiter decided (µs, its clock): usage counts the
	// request in that minute without reading the clock again.
	at int64
	// fallback: decided by the on_store_error local mode, Redis unusable.
	fallback bool
	// seq: Redis' sequence number of the key's grants when it decided
	// (redis.go windowScript); 0 for a decision not made by Redis.
	seq int64
}

// decideLogs decides need units (granting up to want when all fit) for the
// logs of one key under rates, at now, and records what it grants at stamp
// now. It is the memory store's decision; redis.go's script is its twin.
// last (nil: none) counts, on top of the logs, what Redis last reported for
// the key: the on_store_error local decision starts from it.
func decideLogs(logs *[maxRates]policyLog, rates []contract.Rate, now, need, want int64, last *lastReport) decision {
	d := decision{n: len(rates)}
	var sums, lasts [maxRates]int64
	var seeds [maxRates]logEntry
	avail := int64(-1)
	for i, r := range rates {
		w := r.Window.Microseconds()
		sums[i], lasts[i] = logs[i].live(now, w)
		if s := last.seed(i, now, w); s.count > 0 {
			seeds[i] = s
			sums[i] += s.count
			lasts[i] = max(lasts[i], s.stamp)
		}
		a := max(0, r.Quota-sums[i])
		if avail < 0 || a < avail {
			avail = a
		}
	}
	if avail < need {
		for i, r := range rates {
			w := r.Window.Microseconds()
			d.remaining[i] = max(0, r.Quota-sums[i])
			d.resetAfter[i] = max(0, lasts[i]+w-now)
			wt := logs[i].wait(now, w, sums[i], need, r.Quota, seeds[i])
			if wt < 0 {
				d.retryAfter = -1
			} else if d.retryAfter >= 0 {
				d.retryAfter = max(d.retryAfter, wt)
			}
		}
		return d
	}
	n := min(max(want, need), avail)
	d.granted = n
	for i, r := range rates {
		w := r.Window.Microseconds()
		logs[i].add(now, n, granularity(w))
		d.remaining[i] = r.Quota - sums[i] - n
		d.resetAfter[i] = max(lasts[i], now) + w - now
	}
	return d
}
