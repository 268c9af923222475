package gqlcache

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of graphql_cache's span.
const tracerName = "github.com/civicgate/civicgate/modules/gqlcache"

// Span attributes (docs/tracing.md).
const (
	attrCacheStatus = "civicgate.cache.status" // hit, miss, bypass or stale-refused ({graphql.cache})
	attrCacheTier   = "civicgate.cache.tier"   // a hit's tier: memory or shared
)

// startCacheSpan starts the graphql_cache span under ctx's span when that
// span records (tracing on, request sampled); otherwise it returns nil and
// costs one context lookup. The span covers the cache's own work — the key,
// the memory and Redis lookups, a hit's answer — and ends before a miss goes
// upstream: it is not put in the request's context, so the upstream call is
// its sibling.
func startCacheSpan(ctx context.Context) trace.Span {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return nil
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "graphql_cache")
	return span
}

// endCacheSpan records the outcome (and a hit's tier) and ends the span.
func endCacheSpan(span trace.Span, status, tier string) {
	if span == nil {
		return
	}
	if tier != "" {
		span.SetAttributes(attribute.String(attrCacheStatus, status), attribute.String(attrCacheTier, tier))
	} else {
		span.SetAttributes(attribute.String(attrCacheStatus, status))
	}
	span.End()
}
