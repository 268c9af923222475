package ratelimit

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// gcraScript is gcra() executed atomically in Redis on Redis' own clock
// (TIME), so every gateway instance agrees. KEYS[1] = key; ARGV = interval µs,
// quota, tokens wanted. Returns {granted, remaining, reset_after µs,
// retry_after µs}. Refusals write nothing (denied requests are not counted).
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local quota = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local limit = now + quota * interval
local avail = math.floor((limit - tat) / interval)
if avail < 1 then
  return {0, 0, tat - now, tat + interval - limit}
end
local n = math.min(want, avail)
tat = tat + n * interval
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
local remaining = math.floor((limit - tat) / interval)
local retry = 0
if remaining < 1 then retry = tat + interval - limit end
return {n, remaining, tat - now, retry}
`)

// redisTake runs the script for key, asking for up to want tokens.
func redisTake(ctx context.Context, c redis.Scripter, key string, interval, quota, want int64) (decision, error) {
	v, err := gcraScript.Run(ctx, c, []string{key}, interval, quota, want).Int64Slice()
	if err != nil {
		return decision{}, fmt.Errorf("ratelimit: redis gcra: %w", err)
	}
	if len(v) != 4 {
		return decision{}, fmt.Errorf("ratelimit: redis gcra: %d values", len(v))
	}
	return decision{granted: v[0], remaining: v[1], resetAfter: v[2], retryAfter: v[3]}, nil
}
