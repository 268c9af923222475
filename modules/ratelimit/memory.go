package ratelimit

import (
	"hash/maphash"
	"sync"
)

const shardCount = 64

// memoryStore is GCRA in process memory: sharded maps of key → TAT (µs).
// Size is bounded: a full shard first drops idle keys (TAT in the past, which
// are indistinguishable from fresh keys), then arbitrary ones (which then get
// a fresh quota; only reachable with more than maxKeys active keys).
type memoryStore struct {
	seed    maphash.Seed
	perShrd int
	shards  [shardCount]memShard
}

type memShard struct {
	mu   sync.Mutex
	tats map[string]int64
}

func newMemoryStore(maxKeys int) *memoryStore {
	if maxKeys < shardCount {
		maxKeys = shardCount
	}
	m := &memoryStore{seed: maphash.MakeSeed(), perShrd: maxKeys / shardCount}
	for i := range m.shards {
		m.shards[i].tats = make(map[string]int64)
	}
	return m
}

func (m *memoryStore) shard(key string) *memShard {
	return &m.shards[maphash.String(m.seed, key)%shardCount]
}

// take runs GCRA for key at now (µs) on the local clock.
func (m *memoryStore) take(key string, now, interval, quota, want int64) decision {
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	tat, known := s.tats[key]
	newTat, d := gcra(tat, now, interval, quota, want)
	if d.granted > 0 {
		if !known && len(s.tats) >= m.perShrd {
			s.evict(now, m.perShrd)
		}
		s.tats[key] = newTat
	}
	return d
}

func (s *memShard) evict(now int64, limit int) {
	for k, tat := range s.tats {
		if tat <= now {
			delete(s.tats, k)
		}
	}
	for k := range s.tats {
		if len(s.tats) < limit {
			return
		}
		delete(s.tats, k)
	}
}

func (m *memoryStore) len() int {
	n := 0
	for i := range m.shards {
		m.shards[i].mu.Lock()
		n += len(m.shards[i].tats)
		m.shards[i].mu.Unlock()
	}
	return n
}
