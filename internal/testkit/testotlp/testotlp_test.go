package testotlp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// TestReceiverDecodesTheSDKExporter: spans the SDK's OTLP/HTTP exporter sends, gzip-compressed or not,
// arrive flattened with their ids, parent, service, kind, status, attributes (a string slice joined by ",")
// and links; a body that is not protobuf is refused.
func TestReceiverDecodesTheSDKExporter(t *testing.T) {
	for _, compression := range []otlptracehttp.Compression{otlptracehttp.NoCompression, otlptracehttp.GzipCompression} {
		r := testotlp.Start(t)
		ctx := context.Background()
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(r.TracesEndpoint()), otlptracehttp.WithCompression(compression))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"))))
		_, linked := tp.Tracer("t").Start(ctx, "linked")
		linked.End()
		pctx, parent := tp.Tracer("t").Start(ctx, "parent", trace.WithSpanKind(trace.SpanKindServer))
		_, child := tp.Tracer("t").Start(pctx, "child", trace.WithLinks(trace.Link{SpanContext: linked.SpanContext()}),
			trace.WithAttributes(attribute.StringSlice("families", []string{"bills", "members"}), attribute.Int("n", 7)))
		child.End()
		parent.End()
		spans := r.WaitFor(t, 10*time.Second, func(s []testotlp.Span) bool { return len(s) == 3 })
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		by := map[string]testotlp.Span{}
		for _, s := range spans {
			by[s.Name] = s
		}
		c, p, l := by["child"], by["parent"], by["linked"]
		if c.Name != "child" || p.Name != "parent" || c.ParentSpanID != p.SpanID || c.TraceID != p.TraceID || p.ParentSpanID != "" ||
			c.Service != "svc" || p.Kind != "server" || c.Kind != "internal" || c.Status != "unset" ||
			c.Attrs["families"] != "bills,members" || c.Attrs["n"] != "7" ||
			len(c.Links) != 1 || c.Links[0].SpanID != l.SpanID || c.Links[0].TraceID != l.TraceID {
			t.Fatalf("compression %v: spans decoded as\n%+v\n%+v\n%s", compression, c, p, testotlp.Describe(spans))
		}
		if p.SpanID != parent.SpanContext().SpanID().String() || p.TraceID != parent.SpanContext().TraceID().String() {
			t.Fatalf("parent ids %s/%s are not the SDK's", p.TraceID, p.SpanID)
		}
		resp, err := http.Post(r.TracesEndpoint(), "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("a JSON export answered %d", resp.StatusCode)
		}
	}
}
