// Package boundedlru is a map that keeps its most recently used entries
// within two bounds: a number of entries and a total cost (bytes, usually).
// It is the one LRU list of the gateway's caches (docs/design.md D44): the
// guard's compiled documents, graphql_cache's responses, the APQ memory
// store and civic_auth's failed-lookup table.
//
// An LRU is not safe for concurrent use: its callers already hold a mutex
// around more than the list (an index of tags, a counter, a check of the
// text behind a hash), so a lock inside would be a second one on every hit.
//
// Entries live in one slice and link to each other by index, and the map
// holds indexes: a hit allocates nothing, an insert into a full LRU reuses
// the slot of the entry it evicts, and a map whose keys hold no pointers is
// not scanned by the garbage collector.
package boundedlru

import "iter"

// Options are an LRU's bounds and hooks. A zero Options is an LRU without
// bounds.
type Options[K comparable, V any] struct {
	// MaxLen is the most entries kept; ≤ 0: no bound on the count.
	MaxLen int
	// MaxCost is the most total cost kept; ≤ 0: no bound on the cost. It
	// binds only with a Cost function.
	MaxCost int64
	// Cost is an entry's cost, computed once by Put and Update (nil: 0).
	Cost func(V) int64
	// OnEvict, when set, is called for each entry a bound evicts (not for
	// Delete, Clear, or the old value that Put or Update replaces), while
	// the caller's lock is still held.
	OnEvict func(K, V)
}

// LRU is a bounded least-recently-used map. Its zero value is not usable:
// call New.
type LRU[K comparable, V any] struct {
	opts  Options[K, V]
	index map[K]int32
	// nodes[0] is the sentinel of the recency ring: nodes[0].next is the
	// most recently used entry, nodes[0].prev the least.
	nodes     []node[K, V]
	free      int32 // first slot of the free list (linked by next); 0: none
	cost      int64
	evictions uint64
}

type node[K comparable, V any] struct {
	key        K
	val        V
	cost       int64
	prev, next int32
}

// New returns an empty LRU with the given bounds.
func New[K comparable, V any](opts Options[K, V]) *LRU[K, V] {
	return &LRU[K, V]{opts: opts, index: make(map[K]int32), nodes: make([]node[K, V], 1)}
}

// Len is the number of entries.
func (l *LRU[K, V]) Len() int { return len(l.index) }

// Cost is the total cost of the entries.
func (l *LRU[K, V]) Cost() int64 { return l.cost }

// Evictions counts the entries the bounds have evicted since New.
func (l *LRU[K, V]) Evictions() uint64 { return l.evictions }

// Get returns k's value and marks it the most recently used.
func (l *LRU[K, V]) Get(k K) (v V, ok bool) {
	i, ok := l.index[k]
	if !ok {
		return v, false
	}
	l.moveToFront(i)
	return l.nodes[i].val, true
}

// Peek returns k's value without changing its recency.
func (l *LRU[K, V]) Peek(k K) (v V, ok bool) {
	i, ok := l.index[k]
	if !ok {
		return v, false
	}
	return l.nodes[i].val, true
}

// Put stores v under k as the most recently used entry, replacing k's value
// if present, then evicts the least recently used other entries until both
// bounds hold. An entry that alone costs more than MaxCost is refused: Put
// returns false and changes nothing.
func (l *LRU[K, V]) Put(k K, v V) bool {
	c := l.costOf(v)
	if l.opts.MaxCost > 0 && c > l.opts.MaxCost {
		return false
	}
	i, ok := l.index[k]
	if ok {
		l.cost += c - l.nodes[i].cost
		l.nodes[i].val, l.nodes[i].cost = v, c
		l.moveToFront(i)
	} else {
		i = l.alloc()
		l.nodes[i] = node[K, V]{key: k, val: v, cost: c}
		l.index[k] = i
		l.cost += c
		l.pushFront(i)
	}
	l.trim(i)
	return true
}

// Update replaces the value of k, if present, keeping its recency (a
// change of state that is not a use, like a refund); a changed cost may
// evict other entries. It returns false, changing nothing, when k is absent
// or the new value alone costs more than MaxCost.
func (l *LRU[K, V]) Update(k K, v V) bool {
	i, ok := l.index[k]
	if !ok {
		return false
	}
	c := l.costOf(v)
	if l.opts.MaxCost > 0 && c > l.opts.MaxCost {
		return false
	}
	l.cost += c - l.nodes[i].cost
	l.nodes[i].val, l.nodes[i].cost = v, c
	l.trim(i)
	return true
}

// Delete removes k and returns the value it had.
func (l *LRU[K, V]) Delete(k K) (v V, ok bool) {
	i, ok := l.index[k]
	if !ok {
		return v, false
	}
	v = l.nodes[i].val
	l.remove(i)
	return v, true
}

// Clear removes every entry (no OnEvict calls; Evictions is kept).
func (l *LRU[K, V]) Clear() {
	clear(l.index)
	clear(l.nodes) // drop the values' references
	l.nodes = l.nodes[:1]
	l.free, l.cost = 0, 0
}

// All yields the entries from the most recently used to the least, without
// changing their recency. The LRU must not change during the iteration.
func (l *LRU[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for i := l.nodes[0].next; i != 0; i = l.nodes[i].next {
			if !yield(l.nodes[i].key, l.nodes[i].val) {
				return
			}
		}
	}
}

func (l *LRU[K, V]) costOf(v V) int64 {
	if l.opts.Cost == nil {
		return 0
	}
	return l.opts.Cost(v)
}

// trim evicts the least recently used entries other than keep until both
// bounds hold.
func (l *LRU[K, V]) trim(keep int32) {
	for l.overBounds() {
		victim := l.nodes[0].prev
		if victim == keep {
			victim = l.nodes[keep].prev
		}
		if victim == 0 {
			return // keep alone is left; Put and Update checked that it fits
		}
		k, v := l.nodes[victim].key, l.nodes[victim].val
		l.remove(victim)
		l.evictions++
		if l.opts.OnEvict != nil {
			l.opts.OnEvict(k, v)
		}
	}
}

func (l *LRU[K, V]) overBounds() bool {
	return l.opts.MaxLen > 0 && len(l.index) > l.opts.MaxLen ||
		l.opts.MaxCost > 0 && l.cost > l.opts.MaxCost
}

// alloc returns a free slot: the free list's first, else a new one.
func (l *LRU[K, V]) alloc() int32 {
	if i := l.free; i != 0 {
		l.free = l.nodes[i].next
		return i
	}
	l.nodes = append(l.nodes, node[K, V]{})
	return int32(len(l.nodes) - 1)
}

// remove unlinks slot i, drops it from the index and frees it.
func (l *LRU[K, V]) remove(i int32) {
	n := &l.nodes[i]
	delete(l.index, n.key)
	l.cost -= n.cost
	l.nodes[n.prev].next, l.nodes[n.next].prev = n.next, n.prev
	*n = node[K, V]{next: l.free} // drop the key's and value's references
	l.free = i
}

func (l *LRU[K, V]) moveToFront(i int32) {
	if l.nodes[0].next == i {
		return
	}
	n := &l.nodes[i]
	l.nodes[n.prev].next, l.nodes[n.next].prev = n.next, n.prev
	l.pushFront(i)
}

func (l *LRU[K, V]) pushFront(i int32) {
	first := l.nodes[0].next
	l.nodes[i].prev, l.nodes[i].next = 0, first
	l.nodes[first].prev = i
	l.nodes[0].next = i
}
