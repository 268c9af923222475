package httpapi

import (
	"context"
	"net"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/telemetry"
)

// Span and attribute names of recordsd's request spans (the SQL ones are internal/telemetry's).
const (
	SpanOperation     = "graphql.operation"
	SpanResolvePrefix = "graphql.resolve " // + "Query.bills": one span per root field

	AttrOperationName = attribute.Key("graphql.operation.name")
	AttrOperationType = attribute.Key("graphql.operation.type")
	AttrFieldName     = attribute.Key("graphql.field.name")
	AttrErrorCount    = attribute.Key("graphql.errors.count")
)

const tracerName = "github.com/civicgate/civicgate/backend/httpapi"

// traced wraps h in an OpenTelemetry server span named "<METHOD> <route>" whose parent is the request's W3C
// traceparent (set by the gateway's upstream span). With tracing off (Config.TracerProvider nil or no-op) it
// returns h itself: an untraced recordsd pays nothing per request. /healthz is never traced (probes would
// drown the traces that matter).
//
// It is hand-made rather than otelhttp: otelhttp computes its attributes and wraps the request body and
// response writer for every request, sampled or not (~40 allocations); here a request that is not sampled
// costs the traceparent's parsing and a non-recording span, and attributes are set on recording spans only.
func (s *Server) traced(h http.Handler) http.Handler {
	if !telemetry.Enabled(s.cfg.TracerProvider) {
		return h
	}
	tracer := s.cfg.TracerProvider.Tracer(tracerName)
	prop := autoprop.NewTextMapPropagator() // OTEL_PROPAGATORS, default W3C tracecontext + baggage
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			h.ServeHTTP(w, r)
			return
		}
		ctx := prop.Extract(r.Context(), headerCarrier(r.Header))
		route := routeName(r.URL.Path)
		ctx, span := tracer.Start(ctx, spanName(r.Method, route), trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		if !span.IsRecording() {
			h.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		span.SetAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", route),
			attribute.String("url.path", r.URL.Path),
			attribute.String("network.peer.address", peerHost(r.RemoteAddr)),
		)
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// headerCarrier is propagation.HeaderCarrier without canonicalizing the propagators' lower-case keys on
// every request (an allocation each): the W3C and baggage headers are looked up by their canonical form.
type headerCarrier http.Header

func (c headerCarrier) Get(key string) string {
	var canon string
	switch key {
	case "traceparent":
		canon = "Traceparent"
	case "tracestate":
		canon = "Tracestate"
	case "baggage":
		canon = "Baggage"
	default:
		return http.Header(c).Get(key)
	}
	if v := c[canon]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { http.Header(c).Set(key, value) }

func (c headerCarrier) Keys() []string { return propagation.HeaderCarrier(c).Keys() }

// statusWriter remembers the status a handler wrote (for the server span).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func peerHost(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

// routeName is the span name's route: one of ours, or "other" (an unknown path must not make a span name of
// its own: names are for grouping).
func routeName(path string) string {
	switch path {
	case "/graphql", "/bills", "/debug/runtime":
		return path
	}
	return "other"
}

// spanName is "<METHOD> <route>", without building the string for the requests recordsd serves.
func spanName(method, route string) string {
	switch {
	case method == http.MethodPost && route == "/graphql":
		return "POST /graphql"
	case method == http.MethodGet && route == "/bills":
		return "GET /bills"
	}
	return method + " " + route
}

// tracingExtension is the gqlgen extension making the graphql.operation span around a response and a
// graphql.resolve span around each root field (its resolver and the marshalling of everything below it).
// Deeper fields get no span of their own: a page of 1 000 records would make thousands. Installed only when
// tracing is on; inside an unsampled request it does nothing but look at the context's span.
type tracingExtension struct {
	tracer trace.Tracer
	// rootTypes names the schema's root object per operation type ("query" → "Query"): gqlgen's
	// RootFieldContext.Object holds the field's name, not its type's.
	rootTypes map[ast.Operation]string
}

func newTracingExtension(tracer trace.Tracer, schema *ast.Schema) tracingExtension {
	e := tracingExtension{tracer: tracer, rootTypes: map[ast.Operation]string{}}
	for op, def := range map[ast.Operation]*ast.Definition{ast.Query: schema.Query, ast.Mutation: schema.Mutation, ast.Subscription: schema.Subscription} {
		if def != nil {
			e.rootTypes[op] = def.Name
		}
	}
	return e
}

var (
	_ graphql.HandlerExtension     = tracingExtension{}
	_ graphql.ResponseInterceptor  = tracingExtension{}
	_ graphql.RootFieldInterceptor = tracingExtension{}
)

func (tracingExtension) ExtensionName() string                   { return "CivicgateTracing" }
func (tracingExtension) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptResponse implements graphql.ResponseInterceptor.
func (e tracingExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !trace.SpanFromContext(ctx).IsRecording() || !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	attrs := make([]attribute.KeyValue, 0, 2)
	if op := graphql.GetOperationContext(ctx).Operation; op != nil {
		attrs = append(attrs, AttrOperationType.String(string(op.Operation)))
		if op.Name != "" {
			attrs = append(attrs, AttrOperationName.String(op.Name))
		}
	}
	ctx, span := e.tracer.Start(ctx, SpanOperation, trace.WithAttributes(attrs...))
	defer span.End()
	resp := next(ctx)
	if n := len(graphql.GetErrors(ctx)); n > 0 || (resp != nil && len(resp.Errors) > 0) {
		if resp != nil && len(resp.Errors) > n {
			n = len(resp.Errors)
		}
		span.SetAttributes(AttrErrorCount.Int(n))
		span.SetStatus(codes.Error, "graphql errors") // their messages stay out: they can quote input
	}
	return resp
}

// InterceptRootField implements graphql.RootFieldInterceptor.
func (e tracingExtension) InterceptRootField(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return next(ctx)
	}
	rc := graphql.GetRootFieldContext(ctx)
	if rc == nil || !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	typeName := "Query"
	if op := graphql.GetOperationContext(ctx).Operation; op != nil && e.rootTypes[op.Operation] != "" {
		typeName = e.rootTypes[op.Operation]
	}
	ctx, span := e.tracer.Start(ctx, SpanResolvePrefix+typeName+"."+rc.Field.Name,
		trace.WithAttributes(AttrFieldName.String(rc.Field.Name)))
	defer span.End()
	m := next(ctx)
	if n := fieldErrors(ctx, rc.Field.Alias); n > 0 {
		span.SetAttributes(AttrErrorCount.Int(n))
		span.SetStatus(codes.Error, "graphql errors")
	}
	return m
}

// fieldErrors counts the errors of the response so far under the root field answered as alias.
func fieldErrors(ctx context.Context, alias string) int {
	n := 0
	for _, e := range graphql.GetErrors(ctx) {
		if len(e.Path) > 0 && e.Path[0] == ast.PathName(alias) {
			n++
		}
	}
	return n
}
