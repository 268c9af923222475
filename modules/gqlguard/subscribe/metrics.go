package subscribe

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/collectors"
)

// Metrics are the terminated subscriptions' collectors
// (docs/operations.md "Metrics").
type Metrics struct {
	sockets        prometheus.Gauge
	active         prometheus.Gauge
	groups         prometheus.Gauge
	fanOut         prometheus.Histogram
	slowDropped    prometheus.Counter
	upstreamConns  prometheus.Gauge
	upstreamDials  *prometheus.CounterVec // result: connected, failed; reconnect: true/false
	upstreamReconn prometheus.Counter
}

// NewMetrics registers the collectors in reg (none: unregistered), reusing
// the collectors another graphql_guard of the same config registered
// already.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := newMetrics()
	if reg == nil {
		return m, nil
	}
	if err := m.register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

func newMetrics() *Metrics {
	const ns, sub = "civicgate", "graphql_guard"
	return &Metrics{
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "subscription_sockets",
			Help: "Client WebSockets the guard terminates, open now."}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "subscriptions_active",
			Help: "Client subscriptions open on terminated sockets."}),
		groups: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "subscription_groups",
			Help: "Upstream subscriptions (one per dedup group) open now."}),
		fanOut: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "subscription_fanout_size",
			Help:    "Subscribers one upstream event was delivered to.",
			Buckets: []float64{1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000}}),
		slowDropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "subscription_slow_consumers_dropped_total",
			Help: "Client sockets closed 1013 because their send buffer was full."}),
		upstreamConns: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "subscription_upstream_connections",
			Help: "Upstream graphql-transport-ws connections open now."}),
		upstreamDials: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "subscription_upstream_dials_total",
			Help: "Upstream dials, by result (connected, failed)."}, []string{"result"}),
		upstreamReconn: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "subscription_upstream_reconnects_total",
			Help: "Dials made to replace a lost upstream connection."}),
	}
}

func (m *Metrics) register(reg prometheus.Registerer) error {
	var err error
	if m.sockets, err = collectors.Register(reg, m.sockets); err != nil {
		return err
	}
	if m.active, err = collectors.Register(reg, m.active); err != nil {
		return err
	}
	if m.groups, err = collectors.Register(reg, m.groups); err != nil {
		return err
	}
	if m.fanOut, err = collectors.Register(reg, m.fanOut); err != nil {
		return err
	}
	if m.slowDropped, err = collectors.Register(reg, m.slowDropped); err != nil {
		return err
	}
	if m.upstreamConns, err = collectors.Register(reg, m.upstreamConns); err != nil {
		return err
	}
	if m.upstreamDials, err = collectors.Register(reg, m.upstreamDials); err != nil {
		return err
	}
	m.upstreamReconn, err = collectors.Register(reg, m.upstreamReconn)
	return err
}

// socketObserver is wsproxy.Observer on the shell's metrics.
type socketObserver struct{ m *Metrics }

func (o socketObserver) Sockets(delta int)       { o.m.sockets.Add(float64(delta)) }
func (o socketObserver) Subscriptions(delta int) { o.m.active.Add(float64(delta)) }
func (o socketObserver) SlowConsumerDropped()    { o.m.slowDropped.Inc() }

// hubObserver is subhub.Observer on the shell's metrics and log.
type hubObserver struct {
	m      *Metrics
	logger *zap.Logger
}

func (o hubObserver) UpstreamDial(traceCtx context.Context, reconnect bool) func(error) {
	if reconnect {
		o.m.upstreamReconn.Inc()
	}
	span := startUpstreamConnectionSpan(traceCtx, reconnect)
	return func(err error) {
		result := "connected"
		if err != nil {
			result = "failed"
			o.logger.Warn("subscription upstream: dial failed", zap.Bool("reconnect", reconnect), zap.Error(err))
		}
		endUpstreamConnectionSpan(span, err)
		o.m.upstreamDials.WithLabelValues(result).Inc()
	}
}
func (o hubObserver) UpstreamLost(err error) {
	o.logger.Warn("subscription upstream: connection lost, reconnecting", zap.Error(err))
}
func (o hubObserver) UpstreamConnections(delta int) { o.m.upstreamConns.Add(float64(delta)) }
func (o hubObserver) Groups(delta int)              { o.m.groups.Add(float64(delta)) }
func (o hubObserver) FanOut(n int)                  { o.m.fanOut.Observe(float64(n)) }

// tracerName is graphql_guard's instrumentation scope: the shell's spans are
// the guard's (docs/tracing.md).
const tracerName = "github.com/civicgate/civicgate/modules/gqlguard"

// startUpstreamConnectionSpan starts the span of one dial of a terminated
// subscriptions' upstream socket (docs/tracing.md) under the span of the
// subscriber that opened the connection, when that request was sampled;
// reconnects are parented by the same span. nil: not traced.
func startUpstreamConnectionSpan(ctx context.Context, reconnect bool) trace.Span {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsSampled() {
		return nil
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "graphql_guard.upstream_connection",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Bool("civicgate.subscription.reconnect", reconnect)))
	return span
}

// endUpstreamConnectionSpan ends a dial's span: an error status with the
// cause's text when the dial failed.
func endUpstreamConnectionSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
