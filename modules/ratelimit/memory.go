package ratelimit

import (
	"hash/maphash"
	"sync"

	"github.com/civicgate/civicgate/modules/contract"
)

const shardCount = 64

// memoryStore is the sliding-window log in process memory: sharded maps of
// store key → the key's logs. Size is bounded: a full shard first drops idle
// keys (every entry out of its window, indistinguishable from fresh keys),
// then arbitrary ones (which then get a fresh quota; only reachable with
// more than maxKeys active keys).
type memoryStore struct {
	seed    maphash.Seed
	perShrd int
	shards  [shardCount]memShard
}

type memShard struct {
	mu   sync.Mutex
	keys map[string]*memKey
}

// memKey is one store key's state: a log per policy, and when the last of
// them empties (µs).
type memKey struct {
	logs   [maxRates]policyLog
	idleAt int64
}

func newMemoryStore(maxKeys int) *memoryStore {
	if maxKeys < shardCount {
		maxKeys = shardCount
	}
	m := &memoryStore{seed: maphash.MakeSeed(), perShrd: maxKeys / shardCount}
	for i := range m.shards {
		m.shards[i].keys = make(map[string]*memKey)
	}
	return m
}

func (m *memoryStore) shard(key string) *memShard {
	return &m.shards[maphash.String(m.seed, key)%shardCount]
}

// take decides need units (up to want) for key under rates at now (µs, the
// local clock), counting last (nil: none) on top of the key's log
// (decideLogs). A known key does not allocate.
func (m *memoryStore) take(key string, now int64, rates []contract.Rate, need, want int64, last *lastReport) decision {
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[key]
	if k == nil {
		var fresh memKey
		d := decideLogs(&fresh.logs, rates, now, need, want, last)
		if d.granted > 0 {
			if len(s.keys) >= m.perShrd {
				s.evict(now, m.perShrd)
			}
			fresh.idleAt = idleAt(now, rates)
			s.keys[key] = &fresh
		}
		return d
	}
	d := decideLogs(&k.logs, rates, now, need, want, last)
	if d.granted > 0 {
		k.idleAt = max(k.idleAt, idleAt(now, rates))
	}
	return d
}

// idleAt is when units admitted at now have left every window.
func idleAt(now int64, rates []contract.Rate) int64 {
	var w int64
	for _, r := range rates {
		w = max(w, r.Window.Microseconds())
	}
	return now + w + granularity(w)
}

func (s *memShard) evict(now int64, limit int) {
	for k, st := range s.keys {
		if st.idleAt <= now {
			delete(s.keys, k)
		}
	}
	for k := range s.keys {
		if len(s.keys) < limit {
			return
		}
		delete(s.keys, k)
	}
}

func (m *memoryStore) len() int {
	n := 0
	for i := range m.shards {
		m.shards[i].mu.Lock()
		n += len(m.shards[i].keys)
		m.shards[i].mu.Unlock()
	}
	return n
}
