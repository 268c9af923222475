package gqlcache

import (
	"context"
	"net/http"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/modules/contract"
)

// tracedFixture is a hit fixture whose request carries a span of a
// provider that samples per sampler, recording into rec (nil: spans are
// made and dropped).
func tracedFixture(tb testing.TB, sampler sdktrace.Sampler, rec *tracetest.SpanRecorder) (*hitFixture, *tracetest.SpanRecorder, trace.Span) {
	f := newHitFixture(tb)
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSampler(sampler)}
	if rec != nil {
		opts = append(opts, sdktrace.WithSpanProcessor(rec))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("test").Start(f.req.Context(), "server")
	f.req = f.req.WithContext(ctx)
	return f, rec, parent
}

// cacheSpans are the graphql_cache spans ended so far, as status/tier.
func cacheSpans(rec *tracetest.SpanRecorder, parent trace.Span) []string {
	var out []string
	for _, s := range rec.Ended() {
		if s.Name() != "graphql_cache" {
			continue
		}
		var status, tier string
		for _, a := range s.Attributes() {
			switch a.Key {
			case attrCacheStatus:
				status = a.Value.AsString()
			case attrCacheTier:
				tier = a.Value.AsString()
			default:
				status = "unexpected attribute " + string(a.Key)
			}
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			status = "wrong parent"
		}
		out = append(out, status+"/"+tier)
	}
	return out
}

// TestCacheSpan: a sampled request gets a graphql_cache span, a child of
// its span, with the outcome (and a hit's tier) and nothing else; a miss's
// span has ended when the upstream is called (the upstream call is its
// sibling); a mutation is a bypass; an unsampled request records nothing.
func TestCacheSpan(t *testing.T) {
	f, rec, parent := tracedFixture(t, sdktrace.AlwaysSample(), tracetest.NewSpanRecorder())
	f.serve(t) // a memory hit
	f.h.inst.store.flush()
	var atUpstream [][]string // the spans ended at each upstream call
	next := f.next
	f.next = caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		atUpstream = append(atUpstream, cacheSpans(rec, parent))
		return next.ServeHTTP(w, r)
	})
	f.serve(t) // a miss
	q, _ := contract.RequestFrom(f.req.Context())
	decoded, _ := q.GraphQL()
	decoded.Operation.Type = "mutation" // the guard admitted a mutation
	f.serve(t)
	want := []string{"hit/memory", "miss/", "bypass/"}
	if got := cacheSpans(rec, parent); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("spans %v, want %v", got, want)
	}
	if len(atUpstream) != 2 || len(atUpstream[0]) != 2 || len(atUpstream[1]) != 3 {
		t.Fatalf("spans ended at each upstream call: %v, want the miss's, then the bypass's, already ended", atUpstream)
	}

	quiet, rec, parent := tracedFixture(t, sdktrace.NeverSample(), tracetest.NewSpanRecorder())
	quiet.serve(t)
	if got := cacheSpans(rec, parent); len(got) != 0 || len(rec.Ended()) != 0 {
		t.Fatalf("an unsampled request recorded %v", rec.Ended())
	}
}

// BenchmarkHitTracing is BenchmarkHit with tracing off (no span in the
// context), on but the request sampled out, and sampled in (the span made
// and ended; no exporter).
func BenchmarkHitTracing(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{{"off", nil}, {"sampled-out", sdktrace.NeverSample()}, {"sampled-in", sdktrace.AlwaysSample()}} {
		b.Run(c.name, func(b *testing.B) {
			var f *hitFixture
			if c.sampler == nil {
				f = newHitFixture(b)
			} else {
				f, _, _ = tracedFixture(b, c.sampler, nil)
			}
			f.serve(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				f.serve(b)
			}
		})
	}
}
