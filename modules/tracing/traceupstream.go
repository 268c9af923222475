package tracing

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

func init() {
	caddy.RegisterModule(TraceUpstream{})
	httpcaddyfile.RegisterHandlerDirective("civic_trace_upstream", caddyopt.Handler[TraceUpstream]())
	httpcaddyfile.RegisterDirectiveOrder("civic_trace_upstream", httpcaddyfile.Before, "reverse_proxy")
}

// TraceUpstream makes the call to the backend its own span, `upstream`
// (client kind), right around reverse_proxy (docs/tracing.md): it sets the
// span's W3C traceparent on the request, so the backend's server span is its
// child. Unlike a second Caddy tracing handler it records no text of the
// client's (user agent, forwarded addresses, path): only the response status.
// When the request's span does not record (tracing off or not sampled) it
// passes the request on untouched.
type TraceUpstream struct{}

// CaddyModule returns the Caddy module information.
func (TraceUpstream) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_trace_upstream", New: func() caddy.Module { return new(TraceUpstream) }}
}

// UnmarshalCaddyfile reads `civic_trace_upstream` (no options).
func (u *TraceUpstream) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_trace_upstream", caddyopt.Block{})
}

// clientSpan starts a client span; shared, read-only.
var clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (TraceUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	parent := trace.SpanFromContext(r.Context())
	if !parent.IsRecording() {
		return next.ServeHTTP(w, r)
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(r.Context(), "upstream", clientSpan...)
	defer span.End()
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(r.Header))
	rec := &statusRecorder{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	err := next.ServeHTTP(rec, r.WithContext(ctx))
	endWithStatus(span, rec.status, err)
	return err
}

// statusRecorder keeps the first status written through it.
type statusRecorder struct {
	*caddyhttp.ResponseWriterWrapper
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) { // not an informational 1xx
		s.status = code
	}
	s.ResponseWriterWrapper.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriterWrapper.Write(b)
}

// Interface guards
var (
	_ caddyhttp.MiddlewareHandler = (*TraceUpstream)(nil)
	_ caddyfile.Unmarshaler       = (*TraceUpstream)(nil)
)
