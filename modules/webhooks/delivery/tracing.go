package delivery

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// Span and attribute names of a traced delivery attempt (Config.TracerProvider).
const (
	// SpanDeliver is one attempt: the POST and the recording of its outcome. It is the root of a trace of
	// its own (a delivery is not part of the sync that wrote the event, which can be hours older), with a
	// span link to the change event's writer span (change_events.traceparent) when there is one.
	SpanDeliver = "webhook.deliver"

	AttrChangeEventID = attribute.Key("civicgate.change_event.id") // change_events.id (absent for a test ping)
	AttrEndpointID    = attribute.Key("civicgate.webhook.endpoint_id")
	AttrDeliveryID    = attribute.Key("civicgate.webhook.delivery_id")
	AttrAttempt       = attribute.Key("civicgate.webhook.attempt") // 1-based
	AttrKind          = attribute.Key("civicgate.webhook.kind")    // event, replay, test or notice
	AttrFamily        = attribute.Key("civicgate.webhook.family")
	AttrOutcome       = attribute.Key("civicgate.webhook.outcome") // delivered, retry, failed, disabled
	AttrResult        = attribute.Key("civicgate.webhook.result")  // 2xx…5xx, timeout, network, refused, pruned
	AttrStatusCode    = attribute.Key("http.response.status_code")
)

const tracerName = "github.com/civicgate/civicgate/modules/webhooks/delivery"

// traceContext is the only propagator a delivery uses: the receiver gets a W3C traceparent (Standard
// Webhooks receivers ignore headers they do not know), never baggage, which could carry internal values.
var traceContext = propagation.TraceContext{}

// startDeliverSpan starts j's webhook.deliver span, or returns ctx as it is when tracing is off.
func (d *Dispatcher) startDeliverSpan(ctx context.Context, j store.Job) (context.Context, trace.Span) {
	if !telemetry.Enabled(d.cfg.TracerProvider) {
		return ctx, trace.SpanFromContext(ctx)
	}
	attrs := []attribute.KeyValue{
		AttrEndpointID.String(j.EndpointID), AttrDeliveryID.Int64(j.DeliveryID), AttrAttempt.Int(j.Attempt),
		AttrKind.String(j.Kind),
	}
	if j.Seq != 0 {
		attrs = append(attrs, AttrChangeEventID.Int64(j.Seq))
	}
	if j.Family != "" {
		attrs = append(attrs, AttrFamily.String(j.Family))
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	if l, ok := eventLink(j.Traceparent); ok {
		opts = append(opts, trace.WithLinks(l))
	}
	return d.cfg.TracerProvider.Tracer(tracerName).Start(ctx, SpanDeliver, opts...)
}

// eventLink is the span link to the change event's writer, if its traceparent is a valid one.
func eventLink(traceparent string) (trace.Link, bool) {
	if traceparent == "" {
		return trace.Link{}, false
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc}, true
}

// endDeliverSpan records the attempt's outcome on span and ends it. The status description is the attempt's
// documented cause ("timeout", "status 503", …), never a raw error; the endpoint's URL is never recorded
// (its query may hold a token).
func endDeliverSpan(span trace.Span, o store.Outcome, result, outcome string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrOutcome.String(outcome), AttrResult.String(result))
	if o.StatusCode > 0 {
		span.SetAttributes(AttrStatusCode.Int(o.StatusCode))
	}
	if outcome != "delivered" {
		span.SetStatus(codes.Error, o.Error)
	}
	span.End()
}

// injectTraceparent puts ctx's span context into the outgoing request, when tracing gave it one.
func injectTraceparent(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	}
}
