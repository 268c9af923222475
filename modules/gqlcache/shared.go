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

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/redisconn"
)

// Defaults of `shared redis`.
const (
	DefaultSharedPrefix  = "civicgate:cache:"
	defaultSharedTimeout = 50 * time.Millisecond
	envelopeVersion      = 2 // 2: with the Vary names and digest (D40); a 1 is undecodable, a miss overwritten
	// purgeTimeout bounds a purge (4096 INCRs in one pipeline, and behind
	// Sentinel the replica's acknowledgement).
	purgeTimeout = 5 * time.Second
	// purgeReplicaWait is how long a purge behind Sentinel waits for a
	// replica to acknowledge it.
	purgeReplicaWait = time.Second
)

// shared is the optional second tier: entries kept in Redis under a key
// without tag generations, each with the feed cursor its request started at
// (seen) and its tags. An instance accepts one only if none of its tags was
// changed, as far as this instance's listener knows, after seen (README.md
// "Shared in Redis").
type shared struct {
	client   redis.UniversalClient // standalone, Sentinel or Cluster
	prefix   string
	timeout  time.Duration
	reporter atomic.Pointer[redisconn.Reporter] // the current configuration's (counts and logs errors)
	target   *redisconn.Target                  // what purge connects to (nil: client, in tests)

	mu         sync.RWMutex
	cursor     int64            // the highest feed id the listener processed
	floor      int64            // every tag counts as changed at this id (the cursor at connect)
	lastChange map[string]int64 // tag → the highest feed id that changed it (above floor)
}

func newShared(client redis.UniversalClient, prefix string, timeout time.Duration) *shared {
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

// epochGroupDigits is how many hex digits of an entry's hash name its
// group: 16^3 = 4096 groups. An entry and its group's purge epoch share a
// Redis Cluster hash tag, so the lookup reads both with one MGET on one
// slot, and the groups spread entries and epoch reads over every shard (one
// epoch key for all would be a hot key on one shard).
const epochGroupDigits = 3

// key is the Redis key of the material b (the local key's material without
// generations): <prefix>{<group>}<hex SHA-256>, the group being the hash's
// first epochGroupDigits hex digits.
func (s *shared) key(b []byte) string {
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	return s.prefix + "{" + h[:epochGroupDigits] + "}" + h
}

// epochKey is the purge epoch of the group of key (an entry key made by
// key): <prefix>{<group>}purge-epoch, in the entry's slot.
func (s *shared) epochKey(key string) string {
	return key[:len(s.prefix)+epochGroupDigits+2] + "purge-epoch"
}

// epochKeys are the purge epochs of every group.
func (s *shared) epochKeys() []string {
	keys := make([]string, 0, 1<<(4*epochGroupDigits))
	for g := range 1 << (4 * epochGroupDigits) {
		keys = append(keys, fmt.Sprintf("%s{%0*x}purge-epoch", s.prefix, epochGroupDigits, g))
	}
	return keys
}

// errUndecodable is a value that is not an envelope this version reads;
// errBadEpoch a purge epoch that is not a number.
var (
	errUndecodable = errors.New("undecodable shared entry")
	errBadEpoch    = errors.New("undecodable shared purge epoch")
	// errPurgeNotReplicated is a purge written to the Sentinel master that
	// no replica acknowledged within purgeReplicaWait.
	errPurgeNotReplicated = errors.New("the purge epochs were bumped on the master, but no replica acknowledged them " +
		"within 1s: a failover now could undo the purge")
)

// lookup reads the entry under key and its group's purge epoch in one
// round trip (one MGET: both keys are in one cluster slot).
// se is nil when there is none (or it was stored before the last purge).
func (s *shared) lookup(ctx context.Context, key string) (se *sharedEntry, epoch int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	vals, err := s.client.MGet(ctx, s.epochKey(key), key).Result()
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

// purge bumps every group's purge epoch: every entry stored before is
// ignored. It runs on a client of its own (one connection per node, bounds
// of purgeTimeout: a 4096-command pipeline's replies are read under one
// read deadline, too short at the lookups' timeout) — a purge is rare, and
// a fresh client also has a fresh cluster slot map. One pipeline (go-redis
// splits it by node on a cluster); a failure leaves some groups bumped and
// is reported for the purge to be retried. Behind Sentinel a WAIT follows
// on the same connection: a purge no replica acknowledged could be undone
// by a failover, and is reported as such.
func (s *shared) purge() error {
	client := s.client
	if s.target != nil {
		client = s.target.Open(redisconn.Tuning{DialTimeout: purgeTimeout, ReadTimeout: purgeTimeout,
			WriteTimeout: purgeTimeout, MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 1})
		defer client.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), purgeTimeout)
	defer cancel()
	pipe := client.Pipeline()
	for _, k := range s.epochKeys() {
		pipe.Incr(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if s.target == nil || s.target.Mode() != redisconn.ModeSentinel {
		return nil
	}
	c, ok := client.(*redis.Client)
	if !ok {
		return nil
	}
	acks, err := c.Wait(ctx, 1, purgeReplicaWait).Result()
	if err != nil {
		return err
	}
	if acks < 1 {
		return errPurgeNotReplicated
	}
	return nil
}

// reportError counts and logs a Redis failure through the reporter
// (civicgate_redis_errors_total{component="gqlcache",cause}; at most one
// line per cause per second).
// On a Cluster it also has the slot map reloaded (redisconn.ReloadTopology).
func (s *shared) reportError(what string, err error) {
	if rep := s.reporter.Load(); rep != nil {
		rep.Report(err, "graphql_cache shared Redis unavailable: answering from memory and upstream", zap.String("op", what))
	}
	redisconn.ReloadTopology(s.client, err)
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
	vary      []string // the request headers its Vary names (nil: none)
	varySum   [32]byte // their values in the request that fetched it
}

// encodeEnvelope is version, status, seen, epoch, stored (unix ns), ttl
// (ns) as uvarints, then Content-Type, body, the two tag lists and the Vary
// names, each length-prefixed, and the Vary digest.
func encodeEnvelope(se *sharedEntry) []byte {
	b := make([]byte, 0, len(se.body)+len(se.ctype)+64)
	b = append(b, envelopeVersion)
	for _, n := range []int64{int64(se.status), se.seen, se.epoch, se.stored.UnixNano(), int64(se.ttl)} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = appendField(b, se.ctype)
	b = appendBytesField(b, se.body)
	for _, list := range [][]string{se.tags, se.surrogate, se.vary} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, t := range list {
			b = appendField(b, t)
		}
	}
	return appendBytesField(b, se.varySum[:])
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
	for _, list := range []*[]string{&se.tags, &se.surrogate, &se.vary} {
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			return nil, errUndecodable
		}
		for range n {
			*list = append(*list, string(d.field()))
		}
	}
	if sum := d.field(); len(sum) == len(se.varySum) {
		copy(se.varySum[:], sum)
	} else {
		d.bad = true
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
