package auth

import (
	"context"
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// tracerName is the instrumentation scope of civic_auth's spans.
const tracerName = "github.com/civicgate/civicgate/modules/auth"

// Span attributes (docs/tracing.md): never the key, its hash or a header.
const (
	attrCache  = "civicgate.auth.cache"  // hit | miss | negative
	attrResult = "civicgate.auth.result" // ok | a refusal outcome (metrics.go)
	attrOrg    = "civicgate.org"
)

// authSpan is the civic_auth span of one recorded request; a nil *authSpan
// (tracing off, or the request not sampled) records nothing.
type authSpan struct {
	span trace.Span
	org  string
}

// serveTraced is ServeHTTP for a request whose server span records: the
// civic_auth span covers the authentication only (it ends before next runs,
// and next sees the server span as its parent, so the handlers after
// civic_auth are its siblings).
func (h *Handler) serveTraced(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, server trace.Span) error {
	ctx, span := server.TracerProvider().Tracer(tracerName).Start(r.Context(), "civic_auth")
	as := &authSpan{span: span}
	if status := h.cacheStatus(r); status != "" {
		as.span.SetAttributes(attribute.String(attrCache, status))
	}
	resume := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		as.end(outcomeOK)
		return next.ServeHTTP(w, r.WithContext(trace.ContextWithSpan(r.Context(), server)))
	})
	err := h.serve(w, r.WithContext(ctx), resume, as)
	as.end("") // a refusal ended it already; an error of next is not civic_auth's
	return err
}

// cacheStatus says how the key of r's Authorization header stands in the
// cache before civic_auth resolves it: hit (a fresh known key), negative (a
// fresh unknown one) or miss (the store will be asked); "" without a
// well-formed header (no lookup). Only for recorded requests: it hashes the
// key a second time.
func (h *Handler) cacheStatus(r *http.Request) string {
	vals := r.Header["Authorization"]
	if len(vals) != 1 {
		return ""
	}
	token, problem := ParseAuthorization(vals[0], true)
	if problem != headerOK {
		return ""
	}
	e := h.app.cache.get(keystore.HashKey(token))
	switch {
	case e == nil || !h.app.cache.fresh(e, h.app.now()):
		return "miss"
	case e.found:
		return "hit"
	default:
		return "negative"
	}
}

// end records outcome (unless empty) and the caller's organization, and
// ends the span; later calls do nothing.
func (s *authSpan) end(outcome string) {
	if s == nil || s.span == nil {
		return
	}
	if outcome != "" {
		s.span.SetAttributes(attribute.String(attrResult, outcome))
		if s.org != "" {
			s.span.SetAttributes(attribute.String(attrOrg, s.org))
		}
		if outcome == outcomeError {
			s.span.SetStatus(codes.Error, outcomeError)
		}
	}
	s.span.End()
	s.span = nil
}

// setOrg names the organization of a key the store knows.
func (s *authSpan) setOrg(org string) {
	if s != nil {
		s.org = org
	}
}

// startStoreLookup starts civic_auth.store_lookup under ctx's span when that
// span records; the returned func ends it.
func startStoreLookup(ctx context.Context, store string) (context.Context, func(error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, func(error) {}
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "civic_auth.store_lookup",
		trace.WithAttributes(attribute.String("civicgate.auth.store", store)))
	return ctx, func(err error) {
		switch {
		case err == nil:
			span.SetAttributes(attribute.Bool("civicgate.auth.found", true))
		case errors.Is(err, keystore.ErrNotFound):
			span.SetAttributes(attribute.Bool("civicgate.auth.found", false))
		default:
			span.SetStatus(codes.Error, "key store unavailable")
		}
		span.End()
	}
}
