package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

func init() {
	caddy.RegisterModule(TraceEdge{})
	httpcaddyfile.RegisterHandlerDirective("civic_trace_edge", caddyopt.Handler[TraceEdge]())
	httpcaddyfile.RegisterDirectiveOrder("civic_trace_edge", httpcaddyfile.Before, "tracing")
}

// TraceEdge is the gateway's trace-context policy for clients (docs/tracing.md
// "Sampling and the edge"). It runs before Caddy's tracing handler. A request
// from a peer outside Trust has its traceparent, tracestate and baggage
// headers removed, so the gateway starts a trace of its own and samples it by
// its own decision: a public client can neither force a request to be
// recorded (a sampled flag, or a trace id chosen to pass a ratio sampler) nor
// inject baggage that would reach the backend. A well-formed client
// traceparent is kept as a span link on the gateway's server span (civic_auth
// adds it), so a client's own trace can still be joined to the gateway's.
// Requests from a trusted peer (a tracing proxy of the operator's own) keep
// their trace context and continue the trace.
type TraceEdge struct {
	// Trust lists the peers (CIDR prefixes or addresses, "private_ranges",
	// or "none") whose trace context is continued. The peer is the
	// connection's remote address, never a forwarded header.
	Trust []string `json:"trust,omitempty"`

	nets []netip.Prefix
}

// CaddyModule returns the Caddy module information.
func (TraceEdge) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_trace_edge", New: func() caddy.Module { return new(TraceEdge) }}
}

// privateRanges is what "private_ranges" stands for (as in Caddy's
// trusted_proxies): loopback, RFC 1918, unique local and link-local.
var privateRanges = []string{"127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7", "169.254.0.0/16", "fe80::/10"}

// Provision parses Trust.
func (e *TraceEdge) Provision(caddy.Context) error {
	nets, err := parseTrust(e.Trust)
	if err != nil {
		return fmt.Errorf("civic_trace_edge: trust: %w", err)
	}
	e.nets = nets
	return nil
}

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
//	civic_trace_edge {
//	    trust <prefix|address|private_ranges|none>...
//	}
func (e *TraceEdge) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_trace_edge", caddyopt.Block{
		"trust": caddyopt.Func(func(a *caddyopt.Args) error {
			list, err := a.AtLeast(1)
			if err != nil {
				return err
			}
			if _, err := parseTrust(list); err != nil {
				return a.Errf("%v", err)
			}
			e.Trust = list
			return nil
		}),
	})
}

// clientTraceKey holds, in a request's context, the span context a client
// sent in its traceparent when TraceEdge removed it.
type clientTraceKey struct{}

// maxTraceparent bounds the traceparent parsed for the link: version 00 is 55
// bytes; later versions may append fields.
const maxTraceparent = 256

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (e *TraceEdge) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	tp, hasParent := r.Header["Traceparent"]
	_, hasState := r.Header["Tracestate"]
	_, hasBaggage := r.Header["Baggage"]
	if !hasParent && !hasState && !hasBaggage || e.trusted(r.RemoteAddr) {
		return next.ServeHTTP(w, r)
	}
	delete(r.Header, "Traceparent")
	delete(r.Header, "Tracestate")
	delete(r.Header, "Baggage")
	if len(tp) == 1 && len(tp[0]) <= maxTraceparent {
		ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp[0]})
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r = r.WithContext(context.WithValue(r.Context(), clientTraceKey{}, sc))
		}
	}
	return next.ServeHTTP(w, r)
}

func (e *TraceEdge) trusted(remote string) bool {
	if len(e.nets) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range e.nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientLinkAttrs marks the link TraceEdge keeps: the client's own trace.
var clientLinkAttrs = []attribute.KeyValue{attribute.String("civicgate.link", "client_traceparent")}

// linkClientTrace adds, to span, a link to the trace context the client sent
// and TraceEdge removed (if any).
func linkClientTrace(ctx context.Context, span trace.Span) {
	if sc, ok := ctx.Value(clientTraceKey{}).(trace.SpanContext); ok {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: clientLinkAttrs})
	}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*TraceEdge)(nil)
	_ caddyhttp.MiddlewareHandler = (*TraceEdge)(nil)
	_ caddyfile.Unmarshaler       = (*TraceEdge)(nil)
)
