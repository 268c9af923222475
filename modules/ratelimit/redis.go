package ratelimit

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// windowScript is decideLogs executed atomically in Redis on Redis' own clock
// (TIME), so every gateway instance agrees, plus leases (lease.go). One call
// decides every policy of a tier: KEYS[i] is policy i's log for the key, a
// hash of
//
//	b<bucket>   "<stamp>:<count>"           units admitted in that bucket
//	l<lease id> "<granted at>:<stamp>:<n>"  an open lease, stamped at its end
//	s           the grants' sequence number (KEYS[1] only)
//
// All KEYS share one hash tag (one Cluster slot). ARGV: now (0 = TIME, else a
// test clock), need, want, lease ttl µs (0 = no lease: record as admitted
// now), the new lease id, the number s of leases to settle, then for each
// its id, unspent units and µs from its grant to its last spend, then quota
// and window µs per policy. Returns {granted, retry µs (-1 never), now, seq,
// then remaining and reset µs per policy}; the reset counts open leases at
// their grant (what a client is shown: at most the window), while the retry
// counts them at their end (the decision). seq orders the answers of
// concurrent calls for one key (a grant increments it, a refusal reads it):
// the one with the higher seq saw the later state (lease.go record). A
// refusal records nothing.
var windowScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local need, want, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local newid, nsettle = ARGV[5], tonumber(ARGV[6])
local base = 6 + 3 * nsettle -- quota and window of policy i: ARGV[base + 2i - 1], ARGV[base + 2i]
local k = #KEYS
local q, w, gran, sums, lasts, shows, entries = {}, {}, {}, {}, {}, {}, {}

local function addbucket(key, stamp, n, g)
  local f = 'b' .. string.format('%d', math.floor(stamp / g))
  local v = redis.call('HGET', key, f)
  if v then
    local s, c = string.match(v, '^(%d+):(%d+)$')
    s, c = tonumber(s), tonumber(c)
    if s > stamp then stamp = s end
    n = n + c
  end
  redis.call('HSET', key, f, string.format('%d:%d', stamp, n))
end

for i = 1, k do
  q[i], w[i] = tonumber(ARGV[base + 2 * i - 1]), tonumber(ARGV[base + 2 * i])
  gran[i] = math.max(1, math.floor(w[i] / 64))
  local key = KEYS[i]
  for j = 0, nsettle - 1 do
    local field = 'l' .. ARGV[7 + 3 * j]
    local v = redis.call('HGET', key, field)
    if v then
      redis.call('HDEL', key, field)
      local g, s, c = string.match(v, '^(%d+):(%d+):(%d+)$')
      g, s, c = tonumber(g), tonumber(s), tonumber(c) - tonumber(ARGV[8 + 3 * j])
      -- restamped at the last spend: no later than the lease's end, nor than
      -- now (spentAfter is measured from before the grant's round trip, so
      -- grant + spentAfter can pass Redis' now by that round trip; a stamp in
      -- the future showed a reset past the window, t=61 on a 60 s window)
      if c > 0 then addbucket(key, math.min(s, g + tonumber(ARGV[9 + 3 * j]), now), c, gran[i]) end
    end
  end
  local all = redis.call('HGETALL', key)
  local sum, last, shown, list = 0, 0, 0, {}
  for j = 1, #all, 2 do
    local s, c, g
    local kind = string.sub(all[j], 1, 1)
    if kind == 's' then
      -- the sequence number: not an entry
    elseif kind == 'l' then
      g, s, c = string.match(all[j + 1], '^(%d+):(%d+):(%d+)$')
      g = tonumber(g)
    else
      s, c = string.match(all[j + 1], '^(%d+):(%d+)$')
    end
    s, c = tonumber(s), tonumber(c)
    if kind == 's' then
      -- skipped
    elseif s + w[i] <= now then
      redis.call('HDEL', key, all[j])
    else
      sum = sum + c
      if s > last then last = s end
      -- the reset a client is shown counts an open lease at its grant: it is
      -- settled at the last spend when its gateway renews (lease slack, D26)
      if (g or s) > shown then shown = g or s end
      list[#list + 1] = {s, c}
    end
  end
  sums[i], lasts[i], shows[i], entries[i] = sum, last, shown, list
end

local avail = -1
for i = 1, k do
  local a = math.max(0, q[i] - sums[i])
  if avail < 0 or a < avail then avail = a end
end
local out = {0, 0, now, 0}
if avail < need then
  out[4] = tonumber(redis.call('HGET', KEYS[1], 's') or '0')
  local retry = 0
  for i = 1, k do
    local wt = 0
    if need > q[i] then
      wt = -1
    elseif sums[i] + need > q[i] then
      local excess = sums[i] + need - q[i]
      table.sort(entries[i], function(a, b) return a[1] < b[1] end)
      wt = w[i]
      for _, e in ipairs(entries[i]) do
        excess = excess - e[2]
        if excess <= 0 then wt = e[1] + w[i] - now; break end
      end
    end
    if wt < 0 then retry = -1 elseif retry >= 0 and wt > retry then retry = wt end
    out[#out + 1] = math.max(0, q[i] - sums[i])
    out[#out + 1] = math.max(0, shows[i] + w[i] - now)
  end
  out[2] = retry
  return out
end
local n = math.min(math.max(want, need), avail)
out[1] = n
-- HGET and HSET, not HINCRBY: the ACL docs/redis.md gives stays as it was
out[4] = tonumber(redis.call('HGET', KEYS[1], 's') or '0') + 1
redis.call('HSET', KEYS[1], 's', out[4])
for i = 1, k do
  local stamp = now
  if ttl > 0 then
    stamp = now + ttl
    redis.call('HSET', KEYS[i], 'l' .. newid, string.format('%d:%d:%d', now, stamp, n))
  else
    addbucket(KEYS[i], now, n, gran[i])
  end
  local last = math.max(lasts[i], stamp)
  redis.call('PEXPIRE', KEYS[i], math.ceil((last + w[i] - now) / 1000) + 1)
  out[#out + 1] = q[i] - sums[i] - n
  out[#out + 1] = math.max(shows[i], now) + w[i] - now
end
return out
`)

// storeCall is one decision asked of Redis.
type storeCall struct {
	keys       []string // one per policy, one hash tag
	set        *policySet
	now        int64 // 0: Redis' clock
	need, want int64
	ttl        int64  // lease ttl µs; 0: no lease
	leaseID    string // the new lease's id (ttl > 0)
	settle     settlements
}

// redisTake runs the script for c and returns the decision and Redis' now.
func redisTake(ctx context.Context, s redis.Scripter, c storeCall) (decision, int64, error) {
	args := make([]any, 0, 6+3*c.settle.n+2*len(c.set.rates))
	args = append(args, c.now, c.need, c.want, c.ttl, c.leaseID, c.settle.n)
	for _, s := range c.settle.list[:c.settle.n] {
		args = append(args, strconv.FormatUint(s.id, 36), s.unspent, s.spentAfter)
	}
	for _, r := range c.set.rates {
		args = append(args, r.Quota, r.Window.Microseconds())
	}
	v, err := windowScript.Run(ctx, s, c.keys, args...).Int64Slice()
	if err != nil {
		return decision{}, 0, fmt.Errorf("ratelimit: redis window: %w", err)
	}
	if len(v) != 4+2*len(c.set.rates) {
		return decision{}, 0, fmt.Errorf("ratelimit: redis window: %d values", len(v))
	}
	d := decision{granted: v[0], retryAfter: v[1], seq: v[3], n: len(c.set.rates)}
	for i := range c.set.rates {
		d.remaining[i], d.resetAfter[i] = v[4+2*i], v[5+2*i]
	}
	return d, v[2], nil
}
