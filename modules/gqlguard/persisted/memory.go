package persisted

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/civicgate/civicgate/internal/boundedlru"
)

// EntryOverhead is what each Memory entry is accounted beyond its query's
// length: the key, the string header, the list links and the map's share. It
// keeps a flood of tiny documents inside the byte budget too.
const EntryOverhead = 128

// Defaults used by NewMemory for a non-positive bound.
const (
	DefaultMemoryEntries = 10_000
	DefaultMemoryBytes   = 64 << 20
)

// Memory is an in-process LRU store bounded by entry count and by accounted
// bytes (len(query) + EntryOverhead per entry). A hit allocates nothing.
type Memory struct {
	maxEntries int
	maxBytes   int64

	mu  sync.Mutex
	lru *boundedlru.LRU[Hash, string] // guarded by mu
}

// MemoryStats is a snapshot of a Memory's accounting.
type MemoryStats struct {
	Entries    int
	Bytes      int64 // accounted bytes: Σ len(query) + EntryOverhead
	Evictions  uint64
	MaxEntries int
	MaxBytes   int64
}

// NewMemory returns an empty LRU holding at most maxEntries documents and
// maxBytes accounted bytes. A non-positive bound takes its default
// (DefaultMemoryEntries, DefaultMemoryBytes).
func NewMemory(maxEntries int, maxBytes int64) *Memory {
	if maxEntries <= 0 {
		maxEntries = DefaultMemoryEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMemoryBytes
	}
	return &Memory{maxEntries: maxEntries, maxBytes: maxBytes, lru: boundedlru.New(boundedlru.Options[Hash, string]{
		MaxLen: maxEntries, MaxCost: maxBytes, Cost: accountedSize})}
}

// accountedSize is what a document is charged against the byte budget.
func accountedSize(query string) int64 { return int64(len(query)) + EntryOverhead }

// Get returns the query registered under h and marks it recently used. It
// never fails.
func (m *Memory) Get(_ context.Context, h Hash) (string, bool, error) {
	m.mu.Lock()
	q, ok := m.lru.Get(h)
	m.mu.Unlock()
	return q, ok, nil
}

// Put registers query under h, evicting the least recently used entries
// until both bounds hold. A query larger than the whole byte budget is not
// kept (ErrTooLarge). The text is copied, so a caller's larger buffer is not
// retained. A hash already held keeps its text and is marked recently used.
func (m *Memory) Put(_ context.Context, h Hash, query string) error {
	if size := accountedSize(query); size > m.maxBytes {
		return fmt.Errorf("persisted: memory store: %d bytes for hash %s over a budget of %d: %w", size, h, m.maxBytes, ErrTooLarge)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.lru.Get(h); ok {
		return nil
	}
	m.lru.Put(h, strings.Clone(query))
	return nil
}

// Stats returns the current accounting.
func (m *Memory) Stats() MemoryStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MemoryStats{Entries: m.lru.Len(), Bytes: m.lru.Cost(), Evictions: m.lru.Evictions(),
		MaxEntries: m.maxEntries, MaxBytes: m.maxBytes}
}
