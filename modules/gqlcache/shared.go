package gqlcache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Defaults of `shared redis`.
const (
	DefaultSharedPrefix  = "civicgate:cache:"
	defaultSharedTimeout = 50 * time.Millisecond
	sharedLogEvery       = 10 * time.Second
	envelopeVersion      = 1
)

// shared is the optional second tier: entries kept in Redis under a key
// without tag generations, each with the feed cursor its request started at
// (seen) and its tags. An instance accepts one only if none of its tags was
// changed, as far as this instance's listener knows, after seen (README.md
// "Shared in Redis").
type shared struct {
	client  *redis.Client
	prefix  string
	timeout time.Duration
	lastLog atomic.Int64 // unix ns of the last error logged

	mu         sync.RWMutex
	cursor     int64            // the highest feed id the listener processed
	floor      int64            // every tag counts as changed at this id (the cursor at connect)
	lastChange map[string]int64 // tag → the highest feed id that changed it (above floor)
}

func newShared(client *redis.Client, prefix string, timeout time.Duration) *shared {
	return &shared{client: client, prefix: prefix, timeout: timeout, lastChange: map[string]int64{}}
}

// reset is called when the listener (re)connects at cursor: everything up
// to it counts as possibly changed.
func (s *shared) reset(cursor int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cursor, s.floor = cursor, cursor
	clear(s.lastChange)
}

// changed records the feed's rows past the cursor: the highest id per
// family, and the new cursor.
func (s *shared) changed(ids map[string]int64, cursor int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tag, id := range ids {
		s.lastChange[tag] = max(s.lastChange[tag], id)
	}
	s.cursor = max(s.cursor, cursor)
}

// seen is the cursor now: a request records it before going upstream.
func (s *shared) seen() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cursor
}

// valid reports whether an entry fetched at seen with these tags reflects
// every change this instance has processed for them.
func (s *shared) valid(se *sharedEntry) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.floor > se.seen {
		return false
	}
	for _, list := range [][]string{se.tags, se.surrogate} {
		for _, t := range list {
			if s.lastChange[t] > se.seen {
				return false
			}
		}
	}
	return true
}

// key is the Redis key of the material b (the local key's material without
// generations).
func (s *shared) key(b []byte) string {
	sum := sha256.Sum256(b)
	return s.prefix + hex.EncodeToString(sum[:])
}

func (s *shared) epochKey() string { return s.prefix + "purge-epoch" }

// errUndecodable is a value that is not an envelope this version reads;
// errBadEpoch a purge epoch that is not a number.
var (
	errUndecodable = errors.New("undecodable shared entry")
	errBadEpoch    = errors.New("undecodable shared purge epoch")
)

// lookup reads the entry under key and the purge epoch in one round trip.
// se is nil when there is none (or it was stored before the last purge).
func (s *shared) lookup(ctx context.Context, key string) (se *sharedEntry, epoch int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	vals, err := s.client.MGet(ctx, s.epochKey(), key).Result()
	if err != nil {
		return nil, 0, err
	}
	if v, ok := vals[0].(string); ok {
		if epoch, err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, 0, errBadEpoch
		}
	}
	v, ok := vals[1].(string)
	if !ok {
		return nil, epoch, nil
	}
	se, err = decodeEnvelope([]byte(v))
	if err != nil {
		return nil, epoch, err
	}
	if se.epoch != epoch {
		return nil, epoch, nil
	}
	return se, epoch, nil
}

// put stores se under key for ttl.
func (s *shared) put(key string, se *sharedEntry, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	return s.client.Set(ctx, key, encodeEnvelope(se), ttl).Err()
}

// purge bumps the purge epoch: every entry stored before is ignored.
func (s *shared) purge() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	return s.client.Incr(ctx, s.epochKey()).Err()
}

// logError logs a Redis failure at most once per sharedLogEvery.
func (s *shared) logError(log *zap.Logger, what string, err error) {
	now := time.Now().UnixNano()
	last := s.lastLog.Load()
	if now-last < int64(sharedLogEvery) || !s.lastLog.CompareAndSwap(last, now) {
		return
	}
	log.Warn("graphql_cache shared Redis unavailable: answering from memory and upstream",
		zap.String("op", what), zap.String("error", err.Error()))
}

// sharedEntry is an entry as kept in Redis.
type sharedEntry struct {
	status    int
	ctype     string
	body      []byte
	tags      []string // known when the request started
	surrogate []string // from the backend's Surrogate-Key
	seen      int64    // the storing instance's cursor when the request started
	epoch     int64    // the purge epoch when the request started
	stored    time.Time
	ttl       time.Duration
}

// encodeEnvelope is version, status, seen, epoch, stored (unix ns), ttl
// (ns) as uvarints, then Content-Type, body, and the two tag lists, each
// length-prefixed.
func encodeEnvelope(se *sharedEntry) []byte {
	b := make([]byte, 0, len(se.body)+len(se.ctype)+64)
	b = append(b, envelopeVersion)
	for _, n := range []int64{int64(se.status), se.seen, se.epoch, se.stored.UnixNano(), int64(se.ttl)} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = appendField(b, se.ctype)
	b = appendBytesField(b, se.body)
	for _, list := range [][]string{se.tags, se.surrogate} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, t := range list {
			b = appendField(b, t)
		}
	}
	return b
}

// decodeEnvelope reads encodeEnvelope's format; anything else is refused.
func decodeEnvelope(b []byte) (*sharedEntry, error) {
	if len(b) == 0 || b[0] != envelopeVersion {
		return nil, errUndecodable
	}
	d := decoder{b: b[1:]}
	se := &sharedEntry{}
	var nums [5]uint64
	for i := range nums {
		nums[i] = d.uvarint()
	}
	se.status, se.seen, se.epoch = int(nums[0]), int64(nums[1]), int64(nums[2])
	se.stored, se.ttl = time.Unix(0, int64(nums[3])), time.Duration(nums[4])
	se.ctype = string(d.field())
	se.body = d.field()
	for _, list := range []*[]string{&se.tags, &se.surrogate} {
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			return nil, errUndecodable
		}
		for range n {
			*list = append(*list, string(d.field()))
		}
	}
	if d.bad || len(d.b) != 0 || se.status < 100 || se.status > 999 || se.ttl <= 0 {
		return nil, errUndecodable
	}
	return se, nil
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[k:]
	return n
}

func (d *decoder) field() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	f := d.b[:n:n]
	d.b = d.b[n:]
	return f
}

// sharedConfig is a validated `shared redis` block.
type sharedConfig struct {
	url     string // never logged
	opts    *redis.Options
	prefix  string
	timeout time.Duration
}

// sharedOptions validates `shared redis`: it needs the feed (a global order
// of changes to check shared entries against).
func (a *App) sharedOptions(lc *listenConfig) (*sharedConfig, error) {
	sh := a.Shared
	if sh == nil {
		return nil, nil
	}
	if lc == nil || lc.feed == "" {
		return nil, errors.New("graphql_cache: shared redis needs `invalidate postgres <dsn> { feed <table> }`: " +
			"without a change feed there is no global order to check shared entries against")
	}
	url := caddy.NewReplacer().ReplaceKnown(sh.Redis, "")
	if url == "" {
		return nil, fmt.Errorf("graphql_cache: shared redis %q resolved to an empty URL", sh.Redis)
	}
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("graphql_cache: shared redis URL does not parse") // it may hold a password: not echoed
	}
	timeout := time.Duration(sh.Timeout)
	if timeout == 0 {
		timeout = defaultSharedTimeout
	}
	if timeout < 0 {
		return nil, fmt.Errorf("graphql_cache: shared timeout %s must be positive", timeout)
	}
	prefix := sh.KeyPrefix
	if prefix == "" {
		prefix = DefaultSharedPrefix
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
	o.MaxRetries = -1 // one try: a failure is a miss
	o.ContextTimeoutEnabled = true
	return &sharedConfig{url: url, opts: o, prefix: prefix, timeout: timeout}, nil
}

func newRedisClient(sc *sharedConfig) *redis.Client { return redis.NewClient(sc.opts) }
