package persisted

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

	mu        sync.Mutex
	entries   map[Hash]*memoryEntry
	newest    *memoryEntry // most recently used
	oldest    *memoryEntry // next to evict
	bytes     int64
	evictions uint64
}

type memoryEntry struct {
	hash          Hash
	query         string
	newer, older  *memoryEntry
	accountedSize int64
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
	return &Memory{maxEntries: maxEntries, maxBytes: maxBytes, entries: make(map[Hash]*memoryEntry)}
}

// Get returns the query registered under h and marks it recently used. It
// never fails.
func (m *Memory) Get(_ context.Context, h Hash) (string, bool, error) {
	m.mu.Lock()
	e, ok := m.entries[h]
	if !ok {
		m.mu.Unlock()
		return "", false, nil
	}
	m.touch(e)
	q := e.query
	m.mu.Unlock()
	return q, true, nil
}

// Put registers query under h, evicting the least recently used entries
// until both bounds hold. A query larger than the whole byte budget is not
// kept (ErrTooLarge). The text is copied, so a caller's larger buffer is not
// retained.
func (m *Memory) Put(_ context.Context, h Hash, query string) error {
	size := int64(len(query)) + EntryOverhead
	if size > m.maxBytes {
		return fmt.Errorf("persisted: memory store: %d bytes for hash %s over a budget of %d: %w", size, h, m.maxBytes, ErrTooLarge)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[h]; ok {
		m.touch(e)
		return nil
	}
	e := &memoryEntry{hash: h, query: strings.Clone(query), accountedSize: size}
	m.entries[h] = e
	m.pushNewest(e)
	m.bytes += size
	for len(m.entries) > m.maxEntries || m.bytes > m.maxBytes {
		m.evictOldest()
	}
	return nil
}

// Stats returns the current accounting.
func (m *Memory) Stats() MemoryStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MemoryStats{Entries: len(m.entries), Bytes: m.bytes, Evictions: m.evictions,
		MaxEntries: m.maxEntries, MaxBytes: m.maxBytes}
}

// touch moves e to the newest end. m.mu is held.
func (m *Memory) touch(e *memoryEntry) {
	if m.newest == e {
		return
	}
	m.unlink(e)
	m.pushNewest(e)
}

func (m *Memory) pushNewest(e *memoryEntry) {
	e.older, e.newer = m.newest, nil
	if m.newest != nil {
		m.newest.newer = e
	}
	m.newest = e
	if m.oldest == nil {
		m.oldest = e
	}
}

func (m *Memory) unlink(e *memoryEntry) {
	if e.newer != nil {
		e.newer.older = e.older
	} else {
		m.newest = e.older
	}
	if e.older != nil {
		e.older.newer = e.newer
	} else {
		m.oldest = e.newer
	}
	e.newer, e.older = nil, nil
}

func (m *Memory) evictOldest() {
	e := m.oldest
	m.unlink(e)
	delete(m.entries, e.hash)
	m.bytes -= e.accountedSize
	m.evictions++
}
