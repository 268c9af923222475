package export

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the exporter's Prometheus collectors (no labels: never a key,
// organization or URL). A nil *Metrics records nothing.
type Metrics struct {
	Lag      prometheus.Gauge   // civicgate_usage_export_lag_seconds
	Events   prometheus.Counter // civicgate_usage_export_events_total
	Failures prometheus.Counter // civicgate_usage_export_failed_attempts_total
}

// NewMetrics makes the collectors, unregistered (the caller registers them).
func NewMetrics() *Metrics {
	const ns, sub = "civicgate", "usage_export"
	return &Metrics{
		Lag: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "lag_seconds",
			Help: "Now minus the end of the last hour wholly exported (set by the gateway holding the cursor)."}),
		Events: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "events_total",
			Help: "Usage events the sink accepted (a batch sent again after a crash counts again)."}),
		Failures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "failed_attempts_total",
			Help: "Batches the sink did not accept (non-2xx, timeout, network error)."}),
	}
}

func (m *Metrics) setLag(d time.Duration) {
	if m != nil {
		m.Lag.Set(max(d.Seconds(), 0))
	}
}

func (m *Metrics) sent(n int) {
	if m != nil {
		m.Events.Add(float64(n))
	}
}

func (m *Metrics) failed() {
	if m != nil {
		m.Failures.Inc()
	}
}
