package gqlcache

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

func testEntry(key string, body []byte, surrogate []string, now time.Time) *entry {
	h := &Handler{}
	var k cacheKey
	copy(k[:], key)
	hdr := map[string][]string{"Content-Type": {"application/json"}}
	return h.newEntry(k, 200, hdr, body, surrogate, now, time.Minute)
}

// TestStoreBoundedByBytes: 100 000 distinct documents never take more than
// max_bytes as accounted, the oldest are evicted, and the heap stays bounded.
func TestStoreBoundedByBytes(t *testing.T) {
	const maxBytes = 4 << 20
	s := newStore(maxBytes)
	now := time.Now()
	body := make([]byte, 900)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 100_000 {
		e := testEntry(fmt.Sprintf("doc-%d", i), append([]byte(nil), body...), nil, now)
		if reason := s.put(e, tagList{}, s.seqNow()); reason != "" {
			t.Fatalf("put %d: %s", i, reason)
		}
		if _, bytes := s.stats(); bytes > maxBytes {
			t.Fatalf("after %d entries %d bytes accounted, over max_bytes %d", i+1, bytes, maxBytes)
		}
	}
	n, bytes := s.stats()
	per := accountedSize(body, "application/json", nil)
	if want := int(maxBytes / per); n != want {
		t.Fatalf("%d entries of %d bytes in %d bytes (max %d), want %d", n, per, bytes, maxBytes, want)
	}
	var k cacheKey
	copy(k[:], "doc-0")
	if s.get(k, now) != nil {
		t.Fatal("the oldest entry was not evicted")
	}
	copy(k[:], "doc-99999")
	if s.get(k, now) == nil {
		t.Fatal("the newest entry is missing")
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4*maxBytes {
		t.Fatalf("heap grew by %d bytes for a %d-byte store", grown, maxBytes)
	}
}

// TestStoreLRUKeepsRecentlyUsed: a get moves an entry to the front, so the
// least recently used one is evicted.
func TestStoreLRUKeepsRecentlyUsed(t *testing.T) {
	now := time.Now()
	per := accountedSize(make([]byte, 100), "application/json", nil)
	s := newStore(3 * per)
	for _, k := range []string{"a", "b", "c"} {
		s.put(testEntry(k, make([]byte, 100), nil, now), tagList{}, s.seqNow())
	}
	var a, b cacheKey
	copy(a[:], "a")
	copy(b[:], "b")
	s.get(a, now)
	s.put(testEntry("d", make([]byte, 100), nil, now), tagList{}, s.seqNow())
	if s.get(a, now) == nil || s.get(b, now) != nil {
		t.Fatal("want a kept (recently used) and b evicted")
	}
}

// TestStoreExpires: an entry is not returned at or after its expiry.
func TestStoreExpires(t *testing.T) {
	now := time.Now()
	s := newStore(1 << 20)
	e := testEntry("a", []byte("{}"), nil, now)
	s.put(e, tagList{}, s.seqNow())
	if s.get(e.key, now.Add(59*time.Second)) == nil {
		t.Fatal("fresh entry missing")
	}
	if s.get(e.key, now.Add(time.Minute)) != nil {
		t.Fatal("expired entry returned")
	}
	if n, bytes := s.stats(); n != 0 || bytes != 0 {
		t.Fatalf("expired entry kept: %d entries, %d bytes", n, bytes)
	}
}

// TestStoreRefusesInvalidatedSinceStart: a put whose request started before
// an invalidation of one of its tags (known or Surrogate-Key) or a flush is
// refused; a surrogate tag's purge deletes its entries.
func TestStoreRefusesInvalidatedSinceStart(t *testing.T) {
	now := time.Now()
	s := newStore(1 << 20)
	start := s.seqNow()
	s.invalidate([]string{"bills"})
	if r := s.put(testEntry("a", []byte("{}"), nil, now), tagList{csv: "members,bills"}, start); r != detailInvalidated {
		t.Fatalf("known tag: put gave %q", r)
	}
	if r := s.put(testEntry("b", []byte("{}"), []string{"bills"}, now), tagList{}, start); r != detailInvalidated {
		t.Fatalf("surrogate tag: put gave %q", r)
	}
	start = s.seqNow()
	s.flush()
	if r := s.put(testEntry("c", []byte("{}"), nil, now), tagList{}, start); r != detailInvalidated {
		t.Fatalf("flush: put gave %q", r)
	}
	e := testEntry("d", []byte("{}"), []string{"bill:hr-1", "bill:hr-2"}, now)
	if r := s.put(e, tagList{csv: "bills"}, s.seqNow()); r != "" {
		t.Fatal(r)
	}
	if s.invalidate([]string{"bill:hr-2"}) != 1 || s.get(e.key, now) != nil {
		t.Fatal("purging a surrogate tag left its entry")
	}
	if n, bytes := s.stats(); n != 0 || bytes != 0 || len(s.bySurrogate) != 0 {
		t.Fatalf("left %d entries, %d bytes, %d index tags", n, bytes, len(s.bySurrogate))
	}
}

// TestStoreTagIndexFollowsTheLRU: an entry evicted by max_bytes, or replaced
// under its key, leaves the Surrogate-Key index, so a later purge of its tag
// deletes only what holds it now.
func TestStoreTagIndexFollowsTheLRU(t *testing.T) {
	now := time.Now()
	per := accountedSize(make([]byte, 100), "application/json", []string{"bill:hr-1"})
	s := newStore(2 * per)
	put := func(key, tag string) *entry {
		t.Helper()
		e := testEntry(key, make([]byte, 100), []string{tag}, now)
		if r := s.put(e, tagList{}, s.seqNow()); r != "" {
			t.Fatal(r)
		}
		return e
	}
	put("a", "bill:hr-1")
	put("b", "bill:hr-2")
	put("c", "bill:hr-3") // evicts a
	if _, held := s.bySurrogate["bill:hr-1"]; held || len(s.bySurrogate) != 2 {
		t.Fatalf("index %v after evicting a, want bill:hr-2 and bill:hr-3 only", s.bySurrogate)
	}
	b2 := put("b", "bill:hr-4") // replaces b: its old tag goes
	if _, held := s.bySurrogate["bill:hr-2"]; held {
		t.Fatalf("index %v still holds the replaced entry's tag", s.bySurrogate)
	}
	if s.invalidate([]string{"bill:hr-3"}) != 1 || s.get(b2.key, now) != b2 {
		t.Fatal("purging c's tag removed the replacement of b")
	}
	if n, bytes := s.stats(); n != 1 || bytes != b2.size || len(s.bySurrogate) != 1 ||
		value(t, s.metrics.Load().bytes) != float64(b2.size) {
		t.Fatalf("%d entries, %d bytes, index %v; want b alone", n, bytes, s.bySurrogate)
	}
	if got := value(t, s.metrics.Load().evictions); got != 1 {
		t.Fatalf("%v evictions counted, want 1", got)
	}
}
