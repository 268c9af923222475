package webhooks

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/internal/collectors"
)

// metrics are the sidecar's Prometheus collectors (labels: outcome and
// result only; never an endpoint, organization or URL).
type metrics struct {
	deliveries *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	duration   prometheus.Histogram
	lagEvents  prometheus.Gauge
	oldest     prometheus.Gauge
	setAside   *prometheus.CounterVec
	notices    *prometheus.CounterVec
}

// newMetrics registers the collectors in reg (nil: unregistered), reusing the
// ones an earlier configuration registered.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "civicgate", "webhooks"
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "deliveries_total",
			Help: "Finished delivery attempts by outcome: delivered, retry, failed (dead-lettered), disabled (410)."}, []string{"outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "attempts_total",
			Help: "Delivery attempts by result: 2xx, 3xx, 4xx, 5xx, timeout, network, refused (SSRF guard)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "attempt_duration_seconds",
			Help: "Duration of delivery attempts.", Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 15}}),
		lagEvents: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "lag_events",
			Help: "Change events newer than the fan-out position."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "oldest_pending_seconds",
			Help: "Age of the oldest delivery not yet delivered or dead-lettered (active endpoints)."}),
		setAside: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "endpoints_set_aside_total",
			Help: "Endpoints set aside as unusable (their deliveries failed) by kind: secret (cannot be opened with the sealing key), url (no longer allowed), organization (deleted)."},
			[]string{"kind"}),
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "notices_total",
			Help: "Notices sent to organizations (each once, to every active endpoint of the organization) by type, such as schema.deprecation_used."},
			[]string{"type"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.deliveries, err = collectors.Register(reg, m.deliveries); err != nil {
		return nil, err
	}
	if m.attempts, err = collectors.Register(reg, m.attempts); err != nil {
		return nil, err
	}
	if m.duration, err = collectors.Register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.lagEvents, err = collectors.Register(reg, m.lagEvents); err != nil {
		return nil, err
	}
	if m.oldest, err = collectors.Register(reg, m.oldest); err != nil {
		return nil, err
	}
	if m.setAside, err = collectors.Register(reg, m.setAside); err != nil {
		return nil, err
	}
	if m.notices, err = collectors.Register(reg, m.notices); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) Delivery(outcome string) { m.deliveries.WithLabelValues(outcome).Inc() }

func (m *metrics) Attempt(result string, took time.Duration) {
	m.attempts.WithLabelValues(result).Inc()
	m.duration.Observe(took.Seconds())
}

func (m *metrics) Lag(events int64, oldest time.Duration) {
	m.lagEvents.Set(float64(events))
	m.oldest.Set(oldest.Seconds())
}

func (m *metrics) SetAside(kind string) { m.setAside.WithLabelValues(kind).Inc() }

// Notice counts a notice sent (docs/design.md D79).
func (m *metrics) Notice(typ string) { m.notices.WithLabelValues(typ).Inc() }
