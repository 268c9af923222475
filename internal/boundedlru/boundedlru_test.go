package boundedlru

import (
	"fmt"
	"slices"
	"testing"
)

// keys lists l's keys from the most recently used to the least.
func keys[K comparable, V any](l *LRU[K, V]) []K {
	var out []K
	for k := range l.All() {
		out = append(out, k)
	}
	return out
}

func wantOrder[K comparable, V any](t *testing.T, l *LRU[K, V], want ...K) {
	t.Helper()
	if got := keys(l); !slices.Equal(got, want) {
		t.Fatalf("recency %v, want %v", got, want)
	}
	if l.Len() != len(want) {
		t.Fatalf("Len %d, want %d", l.Len(), len(want))
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	var evicted []string
	l := New(Options[string, int]{MaxLen: 3, OnEvict: func(k string, v int) {
		evicted = append(evicted, fmt.Sprintf("%s=%d", k, v))
	}})
	for i, k := range []string{"a", "b", "c"} {
		l.Put(k, i)
	}
	wantOrder(t, l, "c", "b", "a")
	if v, ok := l.Get("a"); !ok || v != 0 {
		t.Fatalf("Get a: %d %v", v, ok)
	}
	wantOrder(t, l, "a", "c", "b")
	l.Put("d", 3) // b is the least recently used
	wantOrder(t, l, "d", "a", "c")
	if _, ok := l.Get("b"); ok {
		t.Fatal("b still there")
	}
	if !slices.Equal(evicted, []string{"b=1"}) || l.Evictions() != 1 {
		t.Fatalf("evicted %v (%d), want b=1", evicted, l.Evictions())
	}
}

func TestPutReplacesAndMovesToFront(t *testing.T) {
	l := New(Options[string, int]{MaxLen: 3})
	l.Put("a", 1)
	l.Put("b", 2)
	l.Put("c", 3)
	l.Put("a", 10)
	wantOrder(t, l, "a", "c", "b")
	if v, _ := l.Peek("a"); v != 10 {
		t.Fatalf("a = %d, want 10", v)
	}
	l.Put("d", 4)
	wantOrder(t, l, "d", "a", "c")
	if l.Evictions() != 1 {
		t.Fatalf("%d evictions: a replacement is not one", l.Evictions())
	}
}

func TestPeekAndUpdateKeepRecency(t *testing.T) {
	l := New(Options[string, int]{MaxLen: 2})
	l.Put("a", 1)
	l.Put("b", 2)
	if v, ok := l.Peek("a"); !ok || v != 1 {
		t.Fatalf("Peek a: %d %v", v, ok)
	}
	if !l.Update("a", 5) {
		t.Fatal("Update of a present key refused")
	}
	wantOrder(t, l, "b", "a")
	if l.Update("zz", 1) {
		t.Fatal("Update of an absent key stored it")
	}
	l.Put("c", 3) // a is still the least recently used
	wantOrder(t, l, "c", "b")
}

func TestDeleteAndClear(t *testing.T) {
	l := New(Options[int, string]{MaxLen: 4, Cost: func(s string) int64 { return int64(len(s)) }})
	for i, s := range []string{"a", "bb", "ccc"} {
		l.Put(i, s)
	}
	if v, ok := l.Delete(1); !ok || v != "bb" {
		t.Fatalf("Delete 1: %q %v", v, ok)
	}
	if _, ok := l.Delete(1); ok {
		t.Fatal("deleted twice")
	}
	wantOrder(t, l, 2, 0)
	if l.Cost() != 4 {
		t.Fatalf("cost %d after delete, want 4", l.Cost())
	}
	l.Put(7, "x") // reuses the freed slot
	if len(l.nodes) != 4 {
		t.Fatalf("%d slots, want the freed one reused (4 with the sentinel)", len(l.nodes))
	}
	wantOrder(t, l, 7, 2, 0)
	l.Clear()
	wantOrder(t, l)
	if l.Cost() != 0 || l.Evictions() != 0 {
		t.Fatalf("after Clear: cost %d, evictions %d", l.Cost(), l.Evictions())
	}
	l.Put(1, "again")
	wantOrder(t, l, 1)
}

func TestCostBound(t *testing.T) {
	var evicted []int
	l := New(Options[int, string]{MaxCost: 10, Cost: func(s string) int64 { return int64(len(s)) },
		OnEvict: func(k int, _ string) { evicted = append(evicted, k) }})
	l.Put(1, "aaaa")
	l.Put(2, "bbbb")
	l.Put(3, "cc") // 10: fits exactly
	wantOrder(t, l, 3, 2, 1)
	l.Put(4, "ddddd") // 15: 1 then 2 go (1 alone would leave 11)
	wantOrder(t, l, 4, 3)
	if l.Cost() != 7 || !slices.Equal(evicted, []int{1, 2}) {
		t.Fatalf("cost %d, evicted %v", l.Cost(), evicted)
	}
	if l.Put(5, "eleven char") {
		t.Fatal("an entry over the whole budget was stored")
	}
	wantOrder(t, l, 4, 3) // and evicted nothing
	l.Put(3, "cccccc")    // replacing grows 3 to 6: 4 (older now) goes
	wantOrder(t, l, 3)
	if l.Cost() != 6 {
		t.Fatalf("cost %d, want 6", l.Cost())
	}
}

// TestUpdateNeverEvictsItsEntry: a grown value that is the least recently
// used entry evicts the others, not itself.
func TestUpdateNeverEvictsItsEntry(t *testing.T) {
	l := New(Options[int, string]{MaxCost: 10, Cost: func(s string) int64 { return int64(len(s)) }})
	l.Put(1, "aaa")
	l.Put(2, "bbb")
	l.Put(3, "ccc")
	if !l.Update(1, "aaaaaaa") { // 7+3+3: 2 goes (3 is more recent)
		t.Fatal("Update refused")
	}
	wantOrder(t, l, 3, 1)
	if l.Update(1, "more than ten") {
		t.Fatal("Update over the whole budget accepted")
	}
	if v, _ := l.Peek(1); v != "aaaaaaa" || l.Cost() != 10 {
		t.Fatalf("refused Update changed the entry: %q, cost %d", v, l.Cost())
	}
}

func TestBothBounds(t *testing.T) {
	l := New(Options[int, int]{MaxLen: 3, MaxCost: 100, Cost: func(v int) int64 { return int64(v) }})
	for i := range 10 {
		l.Put(i, 1)
	}
	wantOrder(t, l, 9, 8, 7)
	l.Put(10, 99) // count allows it; cost keeps only 10 and 9
	wantOrder(t, l, 10, 9)
	if l.Evictions() != 9 {
		t.Fatalf("%d evictions, want 9", l.Evictions())
	}
}

func TestNoBounds(t *testing.T) {
	l := New(Options[int, int]{MaxCost: 1}) // no Cost function: the budget never binds
	for i := range 1000 {
		l.Put(i, i)
	}
	if l.Len() != 1000 || l.Evictions() != 0 {
		t.Fatalf("%d entries, %d evictions", l.Len(), l.Evictions())
	}
}

// TestNoAllocations: a hit, a miss, a replacement and an insert that evicts
// allocate nothing once the LRU is full.
func TestNoAllocations(t *testing.T) {
	type key struct{ a, b uint64 }
	l := New(Options[key, *int]{MaxLen: 64})
	v := new(int)
	for i := range 64 {
		l.Put(key{a: uint64(i)}, v)
	}
	next := uint64(64)
	for name, f := range map[string]func(){
		"hit":     func() { l.Get(key{a: next - 1}) },
		"miss":    func() { l.Get(key{b: 1}) },
		"peek":    func() { l.Peek(key{a: next - 2}) },
		"replace": func() { l.Put(key{a: next - 1}, v) },
		"update":  func() { l.Update(key{a: next - 1}, v) },
		"evict":   func() { l.Put(key{a: next}, v); next++ },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

func BenchmarkGetHit(b *testing.B) {
	type key [32]byte
	l := New(Options[key, string]{MaxLen: 10_000})
	ks := make([]key, 1000)
	for i := range ks {
		ks[i][0], ks[i][1] = byte(i), byte(i>>8)
		l.Put(ks[i], "v")
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := l.Get(ks[i%len(ks)]); !ok {
			b.Fatal("miss")
		}
		i++
	}
}

func BenchmarkPutEvict(b *testing.B) {
	l := New(Options[uint64, uint64]{MaxLen: 1000})
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		l.Put(i, i)
		i++
	}
}
