// Package ratelimit implements the civic_rate_limit HTTP handler: per-key
// GCRA rate limits (burst = quota) kept in Redis, with an in-memory fallback
// (docs/design.md D11; headers and bodies: docs/api.md "Rate limits").
package ratelimit

// GCRA (generic cell rate algorithm) with burst = quota. All times are in
// microseconds. A key's whole state is its theoretical arrival time (TAT).
// With emission interval T = window/quota, taking n tokens at time now is
// allowed while max(tat, now) + n*T - now <= quota*T; a fresh key (tat <= now)
// may therefore spend the whole quota at once and then earns one token back
// every T. The Lua script in redis.go is the same computation.

// decision is the outcome of one rate-limit check.
type decision struct {
	granted    int64 // tokens granted (0 = refused)
	remaining  int64 // tokens still available right after this decision
	resetAfter int64 // µs until the quota is whole again
	retryAfter int64 // µs until one more token is available (0 if available now)
}

// gcra takes up to want tokens (at least one, or none) from a key whose TAT
// is tat, and returns the new TAT and the decision. Refusals leave tat as is.
func gcra(tat, now, interval, quota, want int64) (int64, decision) {
	if tat < now {
		tat = now
	}
	limit := now + quota*interval // the TAT may not pass this
	avail := (limit - tat) / interval
	if avail < 1 {
		return tat, decision{
			granted:    0,
			remaining:  0,
			resetAfter: tat - now,
			retryAfter: tat + interval - limit,
		}
	}
	n := min(want, avail)
	tat += n * interval
	d := decision{granted: n, remaining: (limit - tat) / interval, resetAfter: tat - now}
	if d.remaining < 1 {
		d.retryAfter = tat + interval - limit
	}
	return tat, d
}
