package boundedlru

import (
	"slices"
	"testing"
)

// model is the obvious LRU the fuzz test checks LRU against: a slice of
// entries, most recently used first.
type model struct {
	maxLen  int
	maxCost int64
	entries []modelEntry
	evicted []uint8
}

type modelEntry struct {
	key uint8
	val uint16
}

func cost(v uint16) int64 { return int64(v % 16) }

func (m *model) find(k uint8) int {
	return slices.IndexFunc(m.entries, func(e modelEntry) bool { return e.key == k })
}

func (m *model) total() (c int64) {
	for _, e := range m.entries {
		c += cost(e.val)
	}
	return c
}

// trim evicts from the back, skipping the entry at keep.
func (m *model) trim(keep uint8) {
	for len(m.entries) > 0 && (m.maxLen > 0 && len(m.entries) > m.maxLen || m.maxCost > 0 && m.total() > m.maxCost) {
		i := len(m.entries) - 1
		if m.entries[i].key == keep {
			i--
		}
		if i < 0 {
			return
		}
		m.evicted = append(m.evicted, m.entries[i].key)
		m.entries = slices.Delete(m.entries, i, i+1)
	}
}

func (m *model) put(k uint8, v uint16) bool {
	if m.maxCost > 0 && cost(v) > m.maxCost {
		return false
	}
	if i := m.find(k); i >= 0 {
		m.entries = slices.Delete(m.entries, i, i+1)
	}
	m.entries = slices.Insert(m.entries, 0, modelEntry{k, v})
	m.trim(k)
	return true
}

func (m *model) update(k uint8, v uint16) bool {
	i := m.find(k)
	if i < 0 || m.maxCost > 0 && cost(v) > m.maxCost {
		return false
	}
	m.entries[i].val = v
	m.trim(k)
	return true
}

// FuzzAgainstModel runs a byte string as a program of Get, Peek, Put,
// Update, Delete and Clear over a few keys and checks, after every step,
// the answer, the recency order, the cost and the evictions against model.
func FuzzAgainstModel(f *testing.F) {
	f.Add(uint8(3), uint8(0), []byte{0, 1, 2, 0, 2, 3, 0, 4, 5, 1, 1, 0, 0, 6, 7, 3, 2, 0})
	f.Add(uint8(0), uint8(20), []byte{0, 1, 15, 0, 2, 15, 4, 1, 3, 0, 3, 9, 2, 2, 0, 5, 0, 0})
	f.Add(uint8(2), uint8(12), []byte{0, 0, 9, 0, 1, 9, 0, 2, 3, 4, 0, 12, 3, 1, 0})
	f.Fuzz(func(t *testing.T, maxLen, maxCost uint8, prog []byte) {
		m := &model{maxLen: int(maxLen % 8), maxCost: int64(maxCost % 40)}
		var evicted []uint8
		l := New(Options[uint8, uint16]{MaxLen: m.maxLen, MaxCost: m.maxCost, Cost: cost,
			OnEvict: func(k uint8, _ uint16) { evicted = append(evicted, k) }})
		for pc := 0; pc+2 < len(prog); pc += 3 {
			op, k, v := prog[pc]%6, prog[pc+1]%10, uint16(prog[pc+2])
			switch op {
			case 0:
				if got, want := l.Put(k, v), m.put(k, v); got != want {
					t.Fatalf("step %d Put(%d, %d) = %v, model %v", pc/3, k, v, got, want)
				}
			case 1, 2:
				got, ok := l.Peek(k)
				if op == 1 {
					got, ok = l.Get(k)
				}
				i := m.find(k)
				if ok != (i >= 0) || ok && got != m.entries[i].val {
					t.Fatalf("step %d get %d = %d %v, model index %d", pc/3, k, got, ok, i)
				}
				if op == 1 && ok {
					e := m.entries[i]
					m.entries = slices.Insert(slices.Delete(m.entries, i, i+1), 0, e)
				}
			case 3:
				if got, want := l.Update(k, v), m.update(k, v); got != want {
					t.Fatalf("step %d Update(%d, %d) = %v, model %v", pc/3, k, v, got, want)
				}
			case 4:
				_, ok := l.Delete(k)
				if i := m.find(k); ok != (i >= 0) {
					t.Fatalf("step %d Delete(%d) = %v, model index %d", pc/3, k, ok, i)
				} else if ok {
					m.entries = slices.Delete(m.entries, i, i+1)
				}
			case 5:
				l.Clear()
				m.entries = nil
			}
			var want []uint8
			for _, e := range m.entries {
				want = append(want, e.key)
			}
			if got := keys(l); !slices.Equal(got, want) || l.Len() != len(want) {
				t.Fatalf("step %d: recency %v (Len %d), model %v", pc/3, got, l.Len(), want)
			}
			if l.Cost() != m.total() {
				t.Fatalf("step %d: cost %d, model %d", pc/3, l.Cost(), m.total())
			}
			if !slices.Equal(evicted, m.evicted) || l.Evictions() != uint64(len(m.evicted)) {
				t.Fatalf("step %d: evicted %v (%d), model %v", pc/3, evicted, l.Evictions(), m.evicted)
			}
		}
	})
}
