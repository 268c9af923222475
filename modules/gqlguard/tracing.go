package gqlguard

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of graphql_guard's spans.
const tracerName = "github.com/civicgate/civicgate/modules/gqlguard"

// maxSpanName bounds the operation name recorded on the span: a name is the
// client's text and a document may hold 128 KiB of it.
const maxSpanName = 128

// startGuardSpan starts the graphql_guard span under ctx's span when that
// span records (tracing on, request sampled); otherwise it returns nil and
// costs one context lookup. The span is not put in the request's context:
// the handlers after the guard are its siblings.
func startGuardSpan(ctx context.Context) trace.Span {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return nil
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "graphql_guard")
	return span
}

// startSubscribeSpan starts the span of one WebSocket subscribe message
// under the upgrade request's span when that request was sampled. The
// request's span may have ended (a terminated socket outlives its request):
// its context still parents the subscribe's span.
func startSubscribeSpan(ctx context.Context) trace.Span {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsSampled() {
		return nil
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "graphql_guard.subscribe")
	return span
}

// endGuardSpan records what the guard decided (docs/tracing.md): the
// operation's name, type, cost and families when it was admitted, and the
// outcome (ok or the refusal's metric outcome). Never the document's text or
// its variables.
func endGuardSpan(span trace.Span, adm *admitted, outcome string) {
	if span == nil {
		return
	}
	result := outcome
	if outcome == outcomeAllowed {
		result = "ok"
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, attribute.String("civicgate.graphql.result", result))
	if op := adm.op; op != nil {
		name := op.Name
		if len(name) > maxSpanName {
			name = name[:maxSpanName]
		}
		attrs = append(attrs,
			attribute.String("graphql.operation.name", name),
			attribute.String("graphql.operation.type", string(op.Kind)),
			attribute.Int64("civicgate.graphql.cost", adm.co.Cost),
			attribute.StringSlice("civicgate.graphql.families", op.Families.List),
		)
	}
	span.SetAttributes(attrs...)
	if outcome == outcomeInternal {
		span.SetStatus(codes.Error, outcomeInternal)
	}
	span.End()
}
