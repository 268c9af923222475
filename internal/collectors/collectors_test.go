package collectors

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterReusesTheSameCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	first, err := Register(reg, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(reg, prometheus.NewCounter(opts))
	if err != nil || second != first {
		t.Fatalf("second registration: %v, same collector %v", err, second == first)
	}
	// A different collector under the same name is a real conflict.
	if _, err := Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "other"})); err == nil {
		t.Fatal("conflicting collector accepted")
	}
}

// TestRegisterKeepsCountsAcrossRegistries: a configuration reload provisions
// the modules with a new registry and fresh collectors; the counter the first
// configuration counted with is the one registered again, value and all.
func TestRegisterKeepsCountsAcrossRegistries(t *testing.T) {
	opts := prometheus.CounterOpts{Name: "collectors_test_reload_total", Help: "reloads"}
	first, err := Register(prometheus.NewRegistry(), prometheus.NewCounter(opts))
	if err != nil {
		t.Fatal(err)
	}
	first.Add(7)
	reg := prometheus.NewRegistry()
	second, err := Register(reg, prometheus.NewCounter(opts))
	if err != nil || second != first {
		t.Fatalf("after the reload: %v, same collector %v", err, second == first)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetMetric()[0].GetCounter().GetValue() != 7 {
		t.Fatalf("the new registry serves %v, %v; want the count of 7", mfs, err)
	}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "collectors_test_vec_total", Help: "v"}, []string{"outcome"})
	v1, _ := Register(prometheus.NewRegistry(), vec)
	v1.WithLabelValues("ok").Inc()
	v2, err := Register(prometheus.NewRegistry(), prometheus.NewCounterVec(prometheus.CounterOpts{Name: "collectors_test_vec_total", Help: "v"}, []string{"outcome"}))
	if err != nil || v2 != v1 {
		t.Fatalf("vector: %v, same %v", err, v2 == v1)
	}
}
