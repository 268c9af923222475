package gqlcache

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/civicgate/civicgate/internal/boundedlru"
)

// cacheKey is the SHA-256 of an entry's key material (keys.go).
type cacheKey [32]byte

// entryOverhead is what an entry is charged beyond its key, body and header
// bytes: the entry struct, its map slot and list links, roughly.
const entryOverhead = 160

// entry is one stored response. Its fields are written once, before it is
// stored, and only read afterwards (rendered is the exception: atomic).
type entry struct {
	key       cacheKey
	status    int
	body      []byte
	ctype     []string // Content-Type, capped at one element ([0:1:1])
	clen      []string // Content-Length, likewise
	stored    time.Time
	expires   time.Time
	lifetime  int64    // whole seconds of freshness when stored
	surrogate []string // the tags of its Surrogate-Key header
	size      int64    // the bytes it is charged (accountedSize)
	// vary is the request headers named by the upstream's Vary (varyNames;
	// nil: none) and varySum the digest of their values in the request
	// that fetched it: it serves only requests with the same (vary.go).
	vary    []string
	varySum [32]byte

	rendered atomic.Pointer[renderedHeaders]
}

// renderedHeaders are the Cache-Status and Age values of a hit at one age
// (in whole seconds), so that hits within the same second allocate nothing.
type renderedHeaders struct {
	age  int64
	vals [2]string // Cache-Status, Age
}

// accountedSize is the bytes an entry is charged against max_bytes: its key,
// body, header values and tags, and entryOverhead.
func accountedSize(body []byte, ctype string, surrogate []string) int64 {
	n := int64(len(cacheKey{})) + int64(len(body)) + int64(len(ctype)) + entryOverhead
	for _, t := range surrogate {
		n += int64(len(t)) + 48 // the tag and its index slot
	}
	return n
}

// store is the in-memory response store: a byte-bounded LRU of entries, the
// generation of every tag ever invalidated, and an index from Surrogate-Key
// tags to the entries that carry them.
//
// Lock order: mu before genMu. invalidate and flush take genMu alone, then mu
// alone: a put that read the generations before an invalidation is either
// refused (it sees the new generation) or already indexed (and so deleted).
type store struct {
	mu          sync.Mutex
	entries     *boundedlru.LRU[cacheKey, *entry] // cost: entry.size, up to maxBytes
	maxBytes    int64
	bySurrogate map[string]map[*entry]struct{}

	genMu    sync.RWMutex
	gens     map[string]uint64 // tag → seq of its last invalidation
	seq      uint64            // bumped by every invalidation and flush
	flushSeq uint64            // seq of the last flush

	metrics atomic.Pointer[metrics]
}

func newStore(maxBytes int64) *store {
	s := &store{maxBytes: maxBytes, bySurrogate: map[string]map[*entry]struct{}{}, gens: map[string]uint64{}}
	s.entries = boundedlru.New(boundedlru.Options[cacheKey, *entry]{
		MaxCost: maxBytes,
		Cost:    func(e *entry) int64 { return e.size },
		OnEvict: func(_ cacheKey, e *entry) { // under s.mu, from put
			s.unindex(e)
			s.metrics.Load().evictions.Inc()
		},
	})
	m, _ := newMetrics(nil)
	s.metrics.Store(m)
	return s
}

// get returns the fresh entry under key, or nil; an expired one is removed.
func (s *store) get(key cacheKey, now time.Time) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries.Get(key)
	if !ok {
		return nil
	}
	if !now.Before(e.expires) {
		s.remove(e)
		return nil
	}
	return e
}

// Reasons put gives for not storing (the Cache-Status detail).
const (
	detailInvalidated = "invalidated" // a tag was invalidated (or the store flushed) since the request started
	detailTooLarge    = "too-large"
)

// put stores e unless one of its tags (tags: the ones its key was computed
// with; e.surrogate: the ones the backend sent) was invalidated, or the
// store flushed, after startSeq (the seq read when its request started).
// It returns "" when stored, else why not.
func (s *store) put(e *entry, tags tagList, startSeq uint64) string {
	if e.size > s.maxBytes {
		return detailTooLarge
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.invalidatedSince(tags, e.surrogate, startSeq) {
		return detailInvalidated
	}
	if old, ok := s.entries.Peek(e.key); ok {
		s.unindex(old)
	}
	s.entries.Put(e.key, e) // evicts the least recently used until maxBytes holds
	for _, t := range e.surrogate {
		set := s.bySurrogate[t]
		if set == nil {
			set = map[*entry]struct{}{}
			s.bySurrogate[t] = set
		}
		set[e] = struct{}{}
	}
	s.metrics.Load().bytes.Set(float64(s.entries.Cost()))
	return ""
}

// invalidatedSince reports whether a tag or the whole store was invalidated
// after seq. s.mu is held.
func (s *store) invalidatedSince(tags tagList, surrogate []string, seq uint64) bool {
	s.genMu.RLock()
	defer s.genMu.RUnlock()
	if s.flushSeq > seq {
		return true
	}
	for t := range tags.each {
		if s.gens[t] > seq {
			return true
		}
	}
	for _, t := range surrogate {
		if s.gens[t] > seq {
			return true
		}
	}
	return false
}

// generations appends each tag and its generation to b, and returns the
// current seq: the request's start for put.
func (s *store) generations(b []byte, tags tagList) ([]byte, uint64) {
	s.genMu.RLock()
	defer s.genMu.RUnlock()
	for t := range tags.each {
		b = appendField(b, t)
		b = appendUint(b, s.gens[t])
	}
	return b, s.seq
}

// seqNow is the current seq.
func (s *store) seqNow() uint64 {
	s.genMu.RLock()
	defer s.genMu.RUnlock()
	return s.seq
}

// invalidate gives each tag a new generation, so every key computed with the
// old one is unreachable, and deletes the entries whose Surrogate-Key carries
// it. It returns the number of tags.
func (s *store) invalidate(tags []string) int {
	if len(tags) == 0 {
		return 0
	}
	s.genMu.Lock()
	s.seq++
	for _, t := range tags {
		s.gens[t] = s.seq
	}
	s.genMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tags {
		for e := range s.bySurrogate[t] {
			s.remove(e)
		}
		delete(s.bySurrogate, t)
	}
	m := s.metrics.Load()
	m.invalidations.Add(float64(len(tags)))
	m.bytes.Set(float64(s.entries.Cost()))
	return len(tags)
}

// flush deletes every entry and refuses every put of a request that started
// before it.
func (s *store) flush() {
	s.genMu.Lock()
	s.seq++
	s.flushSeq = s.seq
	s.genMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries.Clear()
	clear(s.bySurrogate)
	s.metrics.Load().bytes.Set(0)
}

// stats returns the number of entries and the bytes accounted.
func (s *store) stats() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries.Len(), s.entries.Cost()
}

// remove deletes e from the LRU and the tag index. s.mu is held.
func (s *store) remove(e *entry) {
	if cur, ok := s.entries.Peek(e.key); ok && cur == e {
		s.entries.Delete(e.key)
	}
	s.unindex(e)
}

// unindex deletes e from the tag index. s.mu is held.
func (s *store) unindex(e *entry) {
	for _, t := range e.surrogate {
		if set := s.bySurrogate[t]; set != nil {
			delete(set, e)
			if len(set) == 0 {
				delete(s.bySurrogate, t)
			}
		}
	}
}
