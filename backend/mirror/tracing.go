package mirror

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/civicgate/civicgate/internal/telemetry"
)

// Span and attribute names of a traced sync run (Options.TracerProvider).
const (
	SpanSyncRun         = "sync.run"          // one Engine.Run
	SpanSyncChunk       = "sync.chunk"        // one chunk's transaction (its change events link here)
	SpanSyncMarkDeleted = "sync.mark_deleted" // a --full-snapshot run's deletion marking

	AttrSyncFamily       = attribute.Key("civicgate.sync.family")
	AttrSyncSource       = attribute.Key("civicgate.sync.source")
	AttrSyncFullSnapshot = attribute.Key("civicgate.sync.full_snapshot")
	AttrSyncResumed      = attribute.Key("civicgate.sync.resumed")
	AttrSyncRecords      = attribute.Key("civicgate.sync.records") // records in a chunk
	AttrSyncRead         = attribute.Key("civicgate.sync.read")    // a run's Stats, at its end
	AttrSyncCreated      = attribute.Key("civicgate.sync.created")
	AttrSyncUpdated      = attribute.Key("civicgate.sync.updated")
	AttrSyncUnchanged    = attribute.Key("civicgate.sync.unchanged")
	AttrSyncDeleted      = attribute.Key("civicgate.sync.deleted")
	AttrSyncMalformed    = attribute.Key("civicgate.sync.malformed")
	AttrSyncChunks       = attribute.Key("civicgate.sync.chunks")
	AttrSyncEvents       = attribute.Key("civicgate.sync.events") // change events a chunk wrote
)

const tracerName = "github.com/civicgate/civicgate/backend/mirror"

var noopSpan = noop.Span{}

// startSpan starts a span of this run when opt traces (otherwise ctx and a no-op span: no cost).
func startSpan(ctx context.Context, opt Options, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !telemetry.Enabled(opt.TracerProvider) {
		return ctx, noopSpan
	}
	return opt.TracerProvider.Tracer(tracerName).Start(ctx, name, trace.WithAttributes(attrs...))
}

// endSpan ends span with err's outcome. The status description is fixed: a sync error can name a file or
// a URL, which are the operator's, not the trace backend's.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "sync failed")
	}
	span.End()
}

// runAttrs are the run's Stats as span attributes.
func runAttrs(st Stats) []attribute.KeyValue {
	return []attribute.KeyValue{
		AttrSyncRead.Int(st.Read), AttrSyncCreated.Int(st.Created), AttrSyncUpdated.Int(st.Updated),
		AttrSyncUnchanged.Int(st.Unchanged), AttrSyncDeleted.Int(st.Deleted), AttrSyncMalformed.Int(st.Malformed),
		AttrSyncChunks.Int(st.Chunks),
	}
}

// traceparent is the W3C traceparent of ctx's span when it records (the value of change_events.traceparent),
// else nil (SQL NULL). Only sampled spans are worth linking to: an unsampled one is exported nowhere.
func traceparent(ctx context.Context) any {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return nil
	}
	sc := span.SpanContext()
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
