package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

func init() {
	caddy.RegisterModule(TraceServer{})
	httpcaddyfile.RegisterHandlerDirective("civic_tracing", caddyopt.Handler[TraceServer]())
	httpcaddyfile.RegisterDirectiveOrder("civic_tracing", httpcaddyfile.Before, "tracing")
}

// TraceServer starts the gateway's server span (docs/tracing.md). It is the
// first handler of a traced site and also the edge policy for a client's
// trace context: a request from a peer outside Trust has its traceparent,
// tracestate and baggage headers removed and gets a trace of the gateway's
// own, sampled by the gateway's sampler alone — a public client can neither
// force a request to be recorded (a sampled flag, or a trace id picked to
// pass a ratio sampler) nor send baggage on to the backend. Its well-formed
// traceparent is kept as a link of the server span. A trusted peer (a tracing
// proxy of the operator's) continues its trace. The span's traceparent is set
// on the request, so reverse_proxy forwards it.
//
// An unsampled request costs a sampling decision, a non-recording span and
// the traceparent header: attributes, the status and the access-log fields
// are recorded only for sampled requests. The tracer provider is the
// process's (internal/telemetry: the OTEL_* environment), shared by every
// instance across config reloads.
type TraceServer struct {
	// SpanName names the server span (default "gateway").
	SpanName string `json:"span,omitempty"`
	// Trust lists the peers (CIDR prefixes or addresses, "private_ranges",
	// or "none") whose trace context is continued. The peer is the
	// connection's remote address, never a forwarded header.
	Trust []string `json:"trust,omitempty"`

	nets   []netip.Prefix
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// CaddyModule returns the Caddy module information.
func (TraceServer) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_tracing", New: func() caddy.Module { return new(TraceServer) }}
}

// providers holds the process's tracer provider while any civic_tracing
// handler uses it (across config reloads).
var providers = caddy.NewUsagePool()

const providerKey = "civicgate"

// sharedProvider is the pooled tracer provider; Destruct flushes and stops it.
type sharedProvider struct {
	tp       trace.TracerProvider
	shutdown func(context.Context) error
}

func (p *sharedProvider) Destruct() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.shutdown(ctx)
}

// Provision parses Trust and takes the shared tracer provider.
func (h *TraceServer) Provision(ctx caddy.Context) error {
	nets, err := parseTrust(h.Trust)
	if err != nil {
		return fmt.Errorf("civic_tracing: trust: %w", err)
	}
	h.nets = nets
	if h.SpanName == "" {
		h.SpanName = "gateway"
	}
	on, err := telemetry.On(providerKey)
	if err != nil {
		return fmt.Errorf("civic_tracing: %w", err)
	}
	if !on {
		return errors.New("civic_tracing: tracing is off: set CIVICGATE_TRACING=on (docs/tracing.md)")
	}
	v, _, err := providers.LoadOrNew(providerKey, func() (caddy.Destructor, error) {
		tp, shutdown, err := telemetry.Setup(context.Background(), providerKey)
		if err != nil {
			return nil, err
		}
		return &sharedProvider{tp: tp, shutdown: shutdown}, nil
	})
	if err != nil {
		return fmt.Errorf("civic_tracing: %w", err)
	}
	h.tracer = v.(*sharedProvider).tp.Tracer(tracerName)
	h.prop = autoprop.NewTextMapPropagator() // OTEL_PROPAGATORS, default W3C tracecontext + baggage
	return nil
}

// Cleanup releases the shared tracer provider (the last user flushes it).
func (h *TraceServer) Cleanup() error {
	if h.tracer == nil {
		return nil
	}
	_, err := providers.Delete(providerKey)
	return err
}

// privateRanges is what "private_ranges" stands for (as in Caddy's
// trusted_proxies): loopback, RFC 1918, unique local and link-local.
var privateRanges = []string{"127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7", "169.254.0.0/16", "fe80::/10"}

func parseTrust(list []string) ([]netip.Prefix, error) {
	var nets []netip.Prefix
	for _, s := range list {
		switch s {
		case "none":
			continue
		case "private_ranges":
			for _, p := range privateRanges {
				nets = append(nets, netip.MustParsePrefix(p))
			}
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			nets = append(nets, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR prefix, an address, private_ranges or none", s)
		}
		nets = append(nets, netip.PrefixFrom(a, a.BitLen()))
	}
	return nets, nil
}

// UnmarshalCaddyfile reads
//
//	civic_tracing {
//	    span <name>
//	    trust <prefix|address|private_ranges|none>...
//	}
func (h *TraceServer) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_tracing", caddyopt.Block{
		"span": caddyopt.String(&h.SpanName),
		"trust": caddyopt.Func(func(a *caddyopt.Args) error {
			list, err := a.AtLeast(1)
			if err != nil {
				return err
			}
			if _, err := parseTrust(list); err != nil {
				return a.Errf("%v", err)
			}
			h.Trust = list
			return nil
		}),
	})
}

// maxTraceparent bounds the traceparent parsed for the link: version 00 is 55
// bytes; later versions may append fields.
const maxTraceparent = 256

// clientLinkAttrs marks the link to the trace context a client sent.
var clientLinkAttrs = []attribute.KeyValue{attribute.String("civicgate.link", "client_traceparent")}

// serverSpan starts a server span; shared, read-only (no allocation per request).
var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *TraceServer) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	ctx := r.Context()
	opts := serverSpan
	if h.trusted(r.RemoteAddr) {
		ctx = h.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	} else if link, ok := stripTraceContext(r.Header); ok {
		opts = []trace.SpanStartOption{serverSpan[0], trace.WithLinks(trace.Link{SpanContext: link, Attributes: clientLinkAttrs})}
	}
	ctx, span := h.tracer.Start(ctx, h.SpanName, opts...)
	defer span.End()
	h.prop.Inject(ctx, propagation.HeaderCarrier(r.Header))
	if !span.IsRecording() {
		return next.ServeHTTP(w, r.WithContext(ctx))
	}
	r = r.WithContext(ctx)
	span.SetAttributes(serverAttrs(r)...)
	sc := span.SpanContext()
	caddyhttp.SetVar(ctx, "trace_id", sc.TraceID().String()) // {http.vars.trace_id}
	caddyhttp.SetVar(ctx, "span_id", sc.SpanID().String())
	if extra, ok := ctx.Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields); ok {
		extra.Add(zap.String("traceID", sc.TraceID().String()))
		extra.Add(zap.String("spanID", sc.SpanID().String()))
	}
	rec := &statusRecorder{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	err := next.ServeHTTP(rec, r)
	endWithStatus(span, rec.status, err)
	return err
}

// stripTraceContext removes a client's trace-context headers and returns the
// span context of its traceparent when that is well formed.
func stripTraceContext(hdr http.Header) (trace.SpanContext, bool) {
	tp, hasParent := hdr["Traceparent"]
	_, hasState := hdr["Tracestate"]
	_, hasBaggage := hdr["Baggage"]
	if !hasParent && !hasState && !hasBaggage {
		return trace.SpanContext{}, false
	}
	delete(hdr, "Traceparent")
	delete(hdr, "Tracestate")
	delete(hdr, "Baggage")
	if len(tp) != 1 || len(tp[0]) > maxTraceparent {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp[0]})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

func (h *TraceServer) trusted(remote string) bool {
	if len(h.nets) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range h.nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// maxClientText bounds each text of the client's recorded on the span.
const maxClientText = 256

// serverAttrs are the server span's attributes (OpenTelemetry HTTP semantic
// conventions), each text of the client's cut to maxClientText bytes and a key
// in the path or user agent redacted. client.address is Caddy's client IP
// (trusted_proxies applied), never a forwarded header taken as it is.
func serverAttrs(r *http.Request) []attribute.KeyValue {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	clientIP, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", clientText(r.Method)),
		attribute.String("url.scheme", scheme),
		attribute.String("url.path", clientText(keystore.RedactedPath(r.URL))),
		attribute.String("server.address", clientText(r.Host)),
		attribute.String("client.address", clientIP),
		attribute.String("network.protocol.version", fmt.Sprintf("%d.%d", r.ProtoMajor, r.ProtoMinor)),
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		attrs = append(attrs, attribute.String("user_agent.original", clientText(string(keystore.RedactKeys([]byte(ua))))))
	}
	return attrs
}

// clientText cuts s to maxClientText bytes, on a rune boundary.
func clientText(s string) string {
	if len(s) <= maxClientText {
		return s
	}
	cut := maxClientText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// endWithStatus records the response status (the one written, or a handler
// error's) and marks a 5xx or an error.
func endWithStatus(span trace.Span, status int, err error) {
	var he caddyhttp.HandlerError
	if status == 0 && errors.As(err, &he) {
		status = he.StatusCode
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err != nil || status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(max(status, http.StatusInternalServerError)))
	}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*TraceServer)(nil)
	_ caddy.CleanerUpper          = (*TraceServer)(nil)
	_ caddyhttp.MiddlewareHandler = (*TraceServer)(nil)
	_ caddyfile.Unmarshaler       = (*TraceServer)(nil)
)
