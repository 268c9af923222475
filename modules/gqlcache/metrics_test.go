package gqlcache

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value reads a counter's or a gauge's value.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// TestMetricsCount: hits, misses, stores, bypasses, invalidations and bytes
// are counted, and the collectors register in a configuration's registry.
func TestMetricsCount(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	hits, misses, stores, bypasses, invalidations := value(t, m.hits), value(t, m.misses),
		value(t, m.stores), value(t, m.bypasses), value(t, m.invalidations)
	f := newHitFixture(t)
	f.h.inst.store.metrics.Store(m)
	f.serve(t) // hit
	f.h.inst.store.invalidate([]string{"bills"})
	f.serve(t) // miss, stored
	f.req.Header.Set("Cache-Control", "no-store")
	f.serve(t) // bypass
	f.req.Header.Del("Cache-Control")
	for name, c := range map[string]struct {
		got, want float64
	}{
		"hits":          {value(t, m.hits) - hits, 1},
		"misses":        {value(t, m.misses) - misses, 1},
		"stores":        {value(t, m.stores) - stores, 1},
		"bypasses":      {value(t, m.bypasses) - bypasses, 1},
		"invalidations": {value(t, m.invalidations) - invalidations, 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", name, c.got, c.want)
		}
	}
	if _, bytes := f.h.inst.store.stats(); value(t, m.bytes) != float64(bytes) || bytes == 0 {
		t.Errorf("bytes gauge %v, store %d", value(t, m.bytes), bytes)
	}
	if f.w.status != http.StatusOK {
		t.Fatal(f.w.status)
	}
}
