package persisted_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

func put(t testing.TB, s persisted.Store, query string) persisted.Hash {
	t.Helper()
	h := persisted.Sum(query)
	if err := s.Put(context.Background(), h, query); err != nil {
		t.Fatalf("Put(%q): %v", query, err)
	}
	return h
}

func has(t testing.TB, s persisted.Store, h persisted.Hash) bool {
	t.Helper()
	_, ok, err := s.Get(context.Background(), h)
	if err != nil {
		t.Fatalf("Get(%s): %v", h, err)
	}
	return ok
}

func TestMemoryGetReturnsWhatWasPut(t *testing.T) {
	m := persisted.NewMemory(10, 1<<20)
	h := put(t, m, "{ a }")
	q, ok, err := m.Get(context.Background(), h)
	if err != nil || !ok || q != "{ a }" {
		t.Fatalf("Get = %q, %v, %v", q, ok, err)
	}
	if _, ok, err := m.Get(context.Background(), persisted.Sum("{ b }")); ok || err != nil {
		t.Fatalf("Get(unknown) = %v, %v; want not found, no error", ok, err)
	}
	put(t, m, "{ a }") // again: no second entry
	if st := m.Stats(); st.Entries != 1 || st.Bytes != int64(len("{ a }"))+persisted.EntryOverhead {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestMemoryEvictsLeastRecentlyUsedByEntries(t *testing.T) {
	m := persisted.NewMemory(3, 1<<20)
	a, b, c := put(t, m, "{ a }"), put(t, m, "{ b }"), put(t, m, "{ c }")
	if !has(t, m, a) { // a becomes the most recently used
		t.Fatal("a missing")
	}
	d := put(t, m, "{ d }")
	if has(t, m, b) {
		t.Fatal("b, the least recently used, was kept")
	}
	for _, h := range []persisted.Hash{a, c, d} {
		if !has(t, m, h) {
			t.Fatalf("%s evicted", h)
		}
	}
	if st := m.Stats(); st.Entries != 3 || st.Evictions != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

// TestMemoryPutAgainMarksUsed: registering a held hash again keeps its text,
// counts once, and makes it the most recently used.
func TestMemoryPutAgainMarksUsed(t *testing.T) {
	m := persisted.NewMemory(2, 1<<20)
	a := put(t, m, "{ a }")
	b := put(t, m, "{ b }")
	if err := m.Put(context.Background(), a, "{ a }"); err != nil {
		t.Fatal(err)
	}
	put(t, m, "{ c }") // b is now the least recently used
	if !has(t, m, a) || has(t, m, b) {
		t.Fatal("want b evicted and a kept")
	}
	if st := m.Stats(); st.Entries != 2 || st.Evictions != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestMemoryEvictsByBytes(t *testing.T) {
	doc := func(c byte) string { return strings.Repeat(string(c), 10) }
	m := persisted.NewMemory(100, 3*(10+persisted.EntryOverhead))
	a, b, c := put(t, m, doc('a')), put(t, m, doc('b')), put(t, m, doc('c'))
	put(t, m, doc('d'))
	if has(t, m, a) || !has(t, m, b) || !has(t, m, c) {
		t.Fatal("want a (oldest) evicted, b and c kept")
	}
	if st := m.Stats(); st.Entries != 3 || st.Bytes != 3*(10+persisted.EntryOverhead) {
		t.Fatalf("Stats = %+v", st)
	}
	// One document bigger than the whole budget is refused and evicts nothing.
	big := strings.Repeat("x", 3*(10+persisted.EntryOverhead))
	err := m.Put(context.Background(), persisted.Sum(big), big)
	if !errors.Is(err, persisted.ErrTooLarge) {
		t.Fatalf("Put(big) = %v, want ErrTooLarge", err)
	}
	if st := m.Stats(); st.Entries != 3 {
		t.Fatalf("after a refused Put: %+v", st)
	}
}

// An APQ hash flood: 100 000 distinct registrations stay within the byte
// budget, the oldest are gone and the newest are there.
func TestMemoryHashFloodStaysWithinBytes(t *testing.T) {
	const n = 100_000
	const maxBytes = 1 << 20
	m := persisted.NewMemory(n, maxBytes) // the entry bound does not bind: bytes do
	docs := make([]string, n)
	for i := range docs {
		docs[i] = fmt.Sprintf("query Flood%d { field%d }", i, i)
		put(t, m, docs[i])
		if i%10_000 == 0 {
			if st := m.Stats(); st.Bytes > maxBytes {
				t.Fatalf("after %d puts: %d accounted bytes > %d", i+1, st.Bytes, maxBytes)
			}
		}
	}
	st := m.Stats()
	if st.Bytes > maxBytes || st.Bytes < maxBytes-int64(len(docs[n-1]))-persisted.EntryOverhead {
		t.Fatalf("accounted bytes %d, want within one entry of %d", st.Bytes, maxBytes)
	}
	if st.Evictions != uint64(n-st.Entries) {
		t.Fatalf("Stats = %+v: evictions + entries != %d", st, n)
	}
	var present int64
	kept := 0
	for i, d := range docs {
		if has(t, m, persisted.Sum(d)) {
			if i < n-st.Entries {
				t.Fatalf("document %d kept while a newer one was evicted", i)
			}
			present += int64(len(d)) + persisted.EntryOverhead
			kept++
		}
	}
	if kept != st.Entries || present != st.Bytes {
		t.Fatalf("found %d documents of %d accounted bytes; Stats says %d and %d", kept, present, st.Entries, st.Bytes)
	}
	if has(t, m, persisted.Sum(docs[0])) || !has(t, m, persisted.Sum(docs[n-1])) {
		t.Fatal("want the first evicted and the last kept")
	}
}

func TestMemoryHitAllocatesNothing(t *testing.T) {
	m := persisted.NewMemory(10, 1<<20)
	ctx := context.Background()
	a, b := put(t, m, "{ a }"), put(t, m, "{ b }")
	n := testing.AllocsPerRun(1000, func() {
		_, _, _ = m.Get(ctx, a) // alternate, so the LRU moves every time
		_, _, _ = m.Get(ctx, b)
	})
	if n != 0 {
		t.Fatalf("a hit allocates %v times", n)
	}
}

func TestMemoryPutCopiesTheText(t *testing.T) {
	m := persisted.NewMemory(10, 1<<20)
	body := `{"query":"{ a }","padding":"` + strings.Repeat("x", 1000) + `"}`
	query := body[10:15] // a slice of a bigger string
	h := put(t, m, query)
	got, _, _ := m.Get(context.Background(), h)
	if got != "{ a }" || unsafe.StringData(got) == unsafe.StringData(query) {
		t.Fatalf("got %q sharing the caller's memory", got)
	}
	if st := m.Stats(); st.Bytes != 5+persisted.EntryOverhead {
		t.Fatalf("accounted %d bytes, want %d", st.Bytes, 5+persisted.EntryOverhead)
	}
}

func TestMemoryDefaults(t *testing.T) {
	st := persisted.NewMemory(0, -1).Stats()
	if st.MaxEntries != persisted.DefaultMemoryEntries || st.MaxBytes != persisted.DefaultMemoryBytes {
		t.Fatalf("Stats = %+v", st)
	}
}

// Run with -race: concurrent puts and gets keep the bounds.
func TestMemoryConcurrentUse(t *testing.T) {
	m := persisted.NewMemory(50, 1<<20)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				q := fmt.Sprintf("{ w%d_%d }", w, i%100)
				h := persisted.Sum(q)
				if err := m.Put(context.Background(), h, q); err != nil {
					t.Error(err)
					return
				}
				if got, ok, _ := m.Get(context.Background(), h); ok && got != q {
					t.Errorf("Get = %q, want %q", got, q)
					return
				}
			}
		}()
	}
	wg.Wait()
	if st := m.Stats(); st.Entries != 50 {
		t.Fatalf("Stats = %+v", st)
	}
}
