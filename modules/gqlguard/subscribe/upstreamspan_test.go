package subscribe

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
)

// TestUpstreamConnectionSpans: each dial of a terminated subscriptions'
// upstream socket is a graphql_guard.upstream_connection client span under
// the opening subscriber's span (a reconnect marked, a failed dial an error
// status with its cause); an unsampled subscriber traces nothing.
func TestUpstreamConnectionSpans(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	obs := hubObserver{m, zap.NewNop()}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("test").Start(context.Background(), "upgrade")
	parent.End()

	obs.UpstreamDial(ctx, false)(nil)
	obs.UpstreamDial(ctx, true)(errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	obs.UpstreamDial(context.Background(), false)(nil) // no span: not sampled

	var dials []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "graphql_guard.upstream_connection" {
			dials = append(dials, s)
		}
	}
	if len(dials) != 2 {
		t.Fatalf("%d upstream_connection spans, want 2 (the unsampled dial traces nothing)", len(dials))
	}
	for i, s := range dials {
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d is not a child of the subscriber's span", i)
		}
		want := attribute.Bool("civicgate.subscription.reconnect", i == 1)
		if attrs := s.Attributes(); len(attrs) != 1 || attrs[0] != want {
			t.Errorf("span %d attributes %v, want %v", i, attrs, want)
		}
	}
	if st := dials[0].Status(); st.Code != codes.Unset {
		t.Errorf("a connected dial has status %v", st)
	}
	if st := dials[1].Status(); st.Code != codes.Error || st.Description != "dial tcp 127.0.0.1:1: connect: connection refused" {
		t.Errorf("a failed dial has status %v", st)
	}
}
