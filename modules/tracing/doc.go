// Package tracing is the gateway's own OpenTelemetry tracing handlers
// (docs/tracing.md, docs/design.md D38): http.handlers.civic_tracing, the
// server span and the edge policy for a client's trace context, and
// http.handlers.civic_trace_upstream, the span of the call to the backend.
// The other modules make their spans under the server span they find in the
// request's context (trace.SpanFromContext), so none imports this package.
// See README.md.
package tracing

// tracerName is the instrumentation scope of the server and upstream spans.
const tracerName = "github.com/civicgate/civicgate/modules/tracing"
