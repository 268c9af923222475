package ratelimit

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// tracedRequest is req with a recording server span from a provider that
// records into rec.
func tracedRequest(t testing.TB, req *http.Request, rec *tracetest.SpanRecorder) *http.Request {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, _ := tp.Tracer("test").Start(req.Context(), "server")
	return req.WithContext(ctx)
}

// TestSpans: civic_rate_limit on every decision, with a civic_rate_limit.redis
// child only on a Redis round trip (not for a decision from a lease), and a
// fallback decision (Redis down, local mode) whose Redis span tells the cause.
func TestSpans(t *testing.T) {
	_, prefix := testenv.Redis(t)
	rec := tracetest.NewSpanRecorder()
	h, req, next := benchHandler("100/h", testLimiter(t, testenv.RedisAddr(), prefix, 0.05)) // lease of 5
	req = tracedRequest(t, req, rec)
	w := &statusWriter{h: http.Header{}}
	for range 2 {
		if err := h.ServeHTTP(w, req, next); err != nil || w.status != 0 {
			t.Fatal(w.status, err)
		}
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want civic_rate_limit.redis + civic_rate_limit, then civic_rate_limit: %v", len(spans), names(spans))
	}
	redisSpan, first, second := spans[0], spans[1], spans[2]
	if redisSpan.Name() != "civic_rate_limit.redis" || first.Name() != "civic_rate_limit" || second.Name() != "civic_rate_limit" {
		t.Fatalf("spans %v", names(spans))
	}
	if redisSpan.Parent().SpanID() != first.SpanContext().SpanID() {
		t.Error("the Redis span is not a child of civic_rate_limit")
	}
	for _, s := range []sdktrace.ReadOnlySpan{first, second} {
		if a := attrs(s); a["civicgate.ratelimit.decision"] != "admitted" || a["civicgate.tier"] != "bench" {
			t.Errorf("%s attributes %v", s.Name(), a)
		}
	}

	// Redis down (nothing listens), local mode: a fallback decision
	rec2 := tracetest.NewSpanRecorder()
	down := testLimiter(t, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), prefix, 0.05)
	h2, req2, _ := benchHandler("100/h", down)
	req2 = tracedRequest(t, req2, rec2)
	if err := h2.ServeHTTP(w, req2, next); err != nil {
		t.Fatal(err)
	}
	spans = rec2.Ended()
	if len(spans) != 2 || spans[0].Name() != "civic_rate_limit.redis" {
		t.Fatalf("spans %v", names(spans))
	}
	if a := attrs(spans[0]); a["civicgate.redis.cause"] != "refused" {
		t.Errorf("redis span attributes %v, want cause refused", a)
	}
	if a := attrs(spans[1]); a["civicgate.ratelimit.decision"] != "fallback" {
		t.Errorf("decision span attributes %v, want decision fallback", a)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name())
	}
	return n
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// BenchmarkHandlerTracing: the handler (a decision from the memory store)
// with no span in the request's context (tracing off), a span that does not
// record (a request sampled out) and a recording span (sampled in: the
// civic_rate_limit span is made). off and sampled_out must cost what
// BenchmarkHandlerUsage/off costs.
func BenchmarkHandlerTracing(b *testing.B) {
	for _, mode := range []string{"off", "sampled_out", "sampled_in"} {
		b.Run(mode, func(b *testing.B) {
			h, req, next := benchHandler("1000000000/h", newLimiter(limiterConfig{mode: modeLocal, maxKeys: 1000}))
			switch mode {
			case "sampled_out":
				sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})
				req = req.WithContext(trace.ContextWithSpanContext(req.Context(), sc))
			case "sampled_in": // recorded, exported nowhere
				tp := sdktrace.NewTracerProvider()
				ctx, _ := tp.Tracer("bench").Start(req.Context(), "server")
				req = req.WithContext(ctx)
			}
			w := &statusWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				if err := h.ServeHTTP(w, req, next); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
