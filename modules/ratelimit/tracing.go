package ratelimit

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/redisconn"
)

// Spans (the tracing contract): civic_rate_limit around a decision, with
// civic_rate_limit.redis around each Redis round trip (a decision from a
// lease or a cached refusal has none). They are made through the span the
// request's context holds, and only when it records: with tracing off (no
// span) or a request sampled out, a decision costs one context lookup.

// tracerName is the instrumentation scope of the limiter's spans.
const tracerName = "github.com/civicgate/civicgate/modules/ratelimit"

// Span attribute keys.
const (
	attrDecision = attribute.Key("civicgate.ratelimit.decision") // admitted | refused | fallback | error
	attrTier     = attribute.Key("civicgate.tier")
	attrCause    = attribute.Key("civicgate.redis.cause")
)

// startSpan starts name under ctx's span if that span records; otherwise
// it returns ctx and nil.
func startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, name)
}

// endDecisionSpan ends civic_rate_limit with what was decided for tier.
func endDecisionSpan(span trace.Span, tier string, d *decision, err error, mode string) {
	outcome := "admitted"
	switch {
	case err != nil && errors.Is(err, errStoreDown) && mode == modeOpen:
		outcome = "fallback"
	case err != nil:
		outcome = "error"
		span.SetStatus(codes.Error, "rate limit store unavailable (on_store_error closed)")
	case d.fallback:
		outcome = "fallback"
	case d.granted == 0:
		outcome = "refused"
	}
	span.SetAttributes(attrDecision.String(outcome), attrTier.String(tier))
	span.End()
}

// endRedisSpan ends civic_rate_limit.redis, with the cause of a failure.
func endRedisSpan(span trace.Span, err error) {
	if err != nil {
		cause := redisconn.Cause(err)
		span.SetAttributes(attrCause.String(cause))
		span.SetStatus(codes.Error, "redis "+cause)
	}
	span.End()
}
