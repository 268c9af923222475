package gqlguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// BenchmarkPersistedHit: a hash-only APQ request's document lookup — find
// the hash in the located body, decode it, read the registered text from the
// memory store and find its compiled document in the cache — to compare with
// BenchmarkCacheHit in the same run (target: no more than a validated-
// document cache hit, ≤ 1 µs, 0 allocations; docs/benchmarks-log.md
// "Persisted-document hit"). Locating the body's members
// (json.Valid) is every request's cost and is left out of both. The body
// rewrite that hands the upstream the full text is BenchmarkPersistedForward.
func BenchmarkPersistedHit(b *testing.B) {
	g, body := persistedBenchGuard(b)
	w := httptest.NewRecorder()
	scope := &requestScope{ctx: context.Background()}
	located, outcome := locateBody(w, body)
	if outcome != "" {
		b.Fatal(outcome)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := located
		if _, outcome := g.resolvePersisted(w, scope, &req); outcome != "" {
			b.Fatal(outcome)
		}
		if doc := g.lookupDocument(&req, nil); doc == nil || doc.Refusal != nil {
			b.Fatal("no document")
		}
	}
}

// BenchmarkPersistedForward: the body the upstream receives for a hash-only
// request (the registered text added as "query"): one allocation.
func BenchmarkPersistedForward(b *testing.B) {
	g, body := persistedBenchGuard(b)
	doc := g.lookup(g.schema.Hash, g.compiler, benchBillsQuery)
	b.ReportAllocs()
	for b.Loop() {
		if out := withQuery(body, doc); len(out) <= len(body) {
			b.Fatal("not rewritten")
		}
	}
}

func persistedBenchGuard(b testing.TB) (*Guard, []byte) {
	g := provisioned(b, &Guard{})
	mem := persisted.NewMemory(100, 1<<20)
	sum := sha256.Sum256([]byte(benchBillsQuery))
	if err := mem.Put(context.Background(), sum, benchBillsQuery); err != nil {
		b.Fatal(err)
	}
	g.apq = mem
	g.lookup(g.schema.Hash, g.compiler, benchBillsQuery) // compiled and cached, as after the registering request
	body := []byte(`{"operationName":"Bills","variables":{"congress":118,"cursor":null},"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}}`)
	return g, body
}

// TestPersistedHitAllocatesNothing pins BenchmarkPersistedHit's 0 allocations.
func TestPersistedHitAllocatesNothing(t *testing.T) {
	g, body := persistedBenchGuard(t)
	w := httptest.NewRecorder()
	scope := &requestScope{ctx: context.Background()}
	allocs := testing.AllocsPerRun(100, func() {
		req, _ := locateBody(w, body)
		_, _ = g.resolvePersisted(w, scope, &req)
		_ = g.lookupDocument(&req, nil)
	})
	if allocs != 0 {
		t.Fatalf("persisted hit allocates %v times, want 0", allocs)
	}
}
