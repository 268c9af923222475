package usage

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkMeterAdd is the hot path: one request counted in an existing
// (key, minute) cell.
func BenchmarkMeterAdd(b *testing.B) {
	m := NewMeter(0)
	key, org := "key_0123456789abcdef", "org_0123456789abcdef"
	d := Delta{Admitted: 1, Cost: 3}
	m.Add(key, org, t0, d)
	b.ReportAllocs()
	for b.Loop() {
		m.Add(key, org, t0, d)
	}
}

// BenchmarkMeterAddParallel: every goroutine counts for its own keys, 1024
// keys in all, the way one gateway counts for many clients at once.
func BenchmarkMeterAddParallel(b *testing.B) {
	m := NewMeter(0)
	const keys = 1024
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("key_%016x", i)
		m.Add(names[i], "org", t0, Delta{})
	}
	d := Delta{Admitted: 1, Cost: 3}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(97))
		for pb.Next() {
			i++
			m.Add(names[i%keys], "org", t0, d)
		}
	})
}

// BenchmarkMeterAddParallelOneKey: the worst case, every goroutine on one key
// (one shard, one lock).
func BenchmarkMeterAddParallelOneKey(b *testing.B) {
	m := NewMeter(0)
	d := Delta{Admitted: 1, Cost: 3}
	m.Add("key_hot", "org", t0, d)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Add("key_hot", "org", t0, d)
		}
	})
}
