package persisted

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisTTL is how long a registration lives in Redis when NewRedis is
// given a non-positive TTL.
const DefaultRedisTTL = 24 * time.Hour

// ErrCorruptEntry is wrapped by Redis.Get when the stored text does not hash
// to its key (a foreign writer or a damaged value): it is never served.
var ErrCorruptEntry = errors.New("stored document does not hash to its key")

// Redis is an APQ store shared by every gateway instance: documents live in
// Redis under <prefix>apq:<hex> with a TTL, fronted by a local Memory so a
// repeated hit never goes to Redis.
type Redis struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
	front  *Memory
}

// NewRedis returns a store on client whose keys start with prefix. A
// non-positive ttl is DefaultRedisTTL; a nil front is a Memory with the
// default bounds. The client's lifetime is the caller's (see RedisClient).
func NewRedis(client redis.UniversalClient, prefix string, ttl time.Duration, front *Memory) *Redis {
	if ttl <= 0 {
		ttl = DefaultRedisTTL
	}
	if front == nil {
		front = NewMemory(0, 0)
	}
	return &Redis{client: client, prefix: prefix, ttl: ttl, front: front}
}

// Key is the Redis key of h: <prefix>apq:<lowercase hex>.
func (r *Redis) Key(h Hash) string {
	return r.prefix + "apq:" + h.String()
}

// Front is the local Memory in front of Redis.
func (r *Redis) Front() *Memory { return r.front }

// Get answers from the front when it can, else from Redis (and then keeps the
// document in the front). An unknown hash is ok=false with a nil error; a
// Redis failure, or a stored text that does not hash to h, is an error.
func (r *Redis) Get(ctx context.Context, h Hash) (string, bool, error) {
	if q, ok, _ := r.front.Get(ctx, h); ok {
		return q, true, nil
	}
	q, err := r.client.Get(ctx, r.Key(h)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("persisted: redis get %s: %w", h, err)
	}
	if Sum(q) != h {
		return "", false, fmt.Errorf("persisted: redis key %s: %w", r.Key(h), ErrCorruptEntry)
	}
	// A document over the front's whole budget is served from Redis each time.
	_ = r.front.Put(ctx, h, q)
	return q, true, nil
}

// Put keeps query under h in the front, then in Redis (refreshing its TTL).
// The front copy serves this instance even when Redis fails; the Redis error
// is returned for the caller to log. The caller has verified Sum(query) == h.
func (r *Redis) Put(ctx context.Context, h Hash, query string) error {
	// A document over the front's whole budget lives in Redis only.
	_ = r.front.Put(ctx, h, query)
	if err := r.client.Set(ctx, r.Key(h), query, r.ttl).Err(); err != nil {
		return fmt.Errorf("persisted: redis set %s: %w", h, err)
	}
	return nil
}
