package persisted_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// BenchmarkMemoryHit: an APQ lookup that the local LRU answers (budget ≤ 1 µs,
// 0 allocs). 1000 documents, visited round robin so the LRU moves each time.
func BenchmarkMemoryHit(b *testing.B) {
	m := persisted.NewMemory(10_000, 64<<20)
	ctx := context.Background()
	hashes := make([]persisted.Hash, 1000)
	for i := range hashes {
		q := fmt.Sprintf("query Q%d { field%d { id name } }", i, i)
		hashes[i] = persisted.Sum(q)
		if err := m.Put(ctx, hashes[i], q); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, _ := m.Get(ctx, hashes[i%len(hashes)]); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkMemoryHitParallel: the same under contention (one mutex).
func BenchmarkMemoryHitParallel(b *testing.B) {
	m := persisted.NewMemory(10_000, 64<<20)
	ctx := context.Background()
	hashes := make([]persisted.Hash, 1000)
	for i := range hashes {
		q := fmt.Sprintf("query Q%d { field%d { id name } }", i, i)
		hashes[i] = persisted.Sum(q)
		_ = m.Put(ctx, hashes[i], q)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, _, _ = m.Get(ctx, hashes[i%len(hashes)])
			i++
		}
	})
}

// BenchmarkManifestByHash: a trusted-document lookup by hash in a manifest of
// 5000 operations (budget ≤ 1 µs, 0 allocs).
func BenchmarkManifestByHash(b *testing.B) {
	docs := make(map[string]string, 5000)
	hashes := make([]persisted.Hash, 0, 5000)
	for i := range 5000 {
		q := fmt.Sprintf("query Op%d { field%d { id } }", i, i)
		h := persisted.Sum(q)
		docs["sha256:"+h.String()] = q
		hashes = append(hashes, h)
	}
	m, err := persisted.ParseManifest(mustJSON(b, docs))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := m.ByHash(hashes[i%len(hashes)]); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkParseDocumentID: turning a GraphQL-over-HTTP documentId into a hash.
func BenchmarkParseDocumentID(b *testing.B) {
	id := "sha256:" + persisted.Sum("{ a }").String()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, ok := persisted.ParseDocumentID(id); !ok {
			b.Fatal("bad id")
		}
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
