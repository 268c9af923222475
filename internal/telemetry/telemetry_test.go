package telemetry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
	"go.opentelemetry.io/otel/trace"
)

// traceEnv points the OTLP exporter at r and clears the switches; t.Setenv makes these tests sequential.
func traceEnv(t *testing.T, r *testotlp.Receiver) {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv(telemetry.SwitchAll, "")
	t.Setenv("RECORDSD_TRACING", "")
}

// setup is telemetry.Setup for the test; the returned flush exports everything ended so far (it shuts the
// provider down: call it once).
func setup(t *testing.T, service string) (trace.TracerProvider, func()) {
	t.Helper()
	tp, shutdown, err := telemetry.Setup(context.Background(), service)
	if err != nil {
		t.Fatal(err)
	}
	flushed := false
	flush := func() {
		t.Helper()
		if flushed {
			return
		}
		flushed = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	}
	t.Cleanup(flush)
	return tp, flush
}

func TestSetupOffExportsNothing(t *testing.T) {
	r := testotlp.Start(t)
	traceEnv(t, r)
	tp, flush := setup(t, "recordsd")
	if telemetry.Enabled(tp) {
		t.Fatal("tracing is on with no switch set")
	}
	ctx, span := tp.Tracer("t").Start(context.Background(), "root")
	_, child := tp.Tracer("t").Start(ctx, "child")
	if span.IsRecording() || child.IsRecording() {
		t.Fatal("a span of the off provider records")
	}
	child.End()
	span.End()
	flush()
	if got := r.Spans(); len(got) != 0 {
		t.Fatalf("off, the receiver got %d spans:\n%s", len(got), testotlp.Describe(got))
	}
	if telemetry.NewQueryTracer(tp) != nil {
		t.Fatal("NewQueryTracer of the off provider is not nil")
	}
}

func TestSetupOnExportsParentAndChild(t *testing.T) {
	for _, sw := range []string{"RECORDSD_TRACING", telemetry.SwitchAll} {
		t.Run(sw, func(t *testing.T) {
			r := testotlp.Start(t)
			traceEnv(t, r)
			t.Setenv(sw, "on")
			tp, flush := setup(t, "recordsd")
			if !telemetry.Enabled(tp) {
				t.Fatalf("%s=on left tracing off", sw)
			}
			ctx, root := tp.Tracer("t").Start(context.Background(), "root")
			_, child := tp.Tracer("t").Start(ctx, "child")
			child.End()
			root.End()
			flush()
			spans := r.Spans()
			byName := map[string]testotlp.Span{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			rs, cs := byName["root"], byName["child"]
			if len(spans) != 2 || rs.SpanID == "" || cs.SpanID == "" {
				t.Fatalf("want root and child, got:\n%s", testotlp.Describe(spans))
			}
			if cs.TraceID != rs.TraceID || cs.ParentSpanID != rs.SpanID || rs.ParentSpanID != "" {
				t.Fatalf("child is not root's child:\n%s", testotlp.Describe(spans))
			}
			if rs.Service != "recordsd" {
				t.Fatalf("service.name = %q, want recordsd", rs.Service)
			}
		})
	}
}

func TestSetupServiceNameFromEnvironment(t *testing.T) {
	r := testotlp.Start(t)
	traceEnv(t, r)
	t.Setenv(telemetry.SwitchAll, "on")
	t.Setenv("OTEL_SERVICE_NAME", "records-eu-1")
	tp, flush := setup(t, "recordsd")
	_, span := tp.Tracer("t").Start(context.Background(), "root")
	span.End()
	flush()
	spans := r.Spans()
	if len(spans) != 1 || spans[0].Service != "records-eu-1" {
		t.Fatalf("want one span of service records-eu-1, got:\n%s", testotlp.Describe(spans))
	}
}

func TestSetupSamplerFromEnvironment(t *testing.T) {
	r := testotlp.Start(t)
	traceEnv(t, r)
	t.Setenv(telemetry.SwitchAll, "on")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	tp, flush := setup(t, "recordsd")
	_, span := tp.Tracer("t").Start(context.Background(), "root")
	if span.IsRecording() {
		t.Fatal("always_off sampler records")
	}
	span.End()
	flush()
	if got := r.Spans(); len(got) != 0 {
		t.Fatalf("always_off exported:\n%s", testotlp.Describe(got))
	}
}

func TestSwitchRejectsTypos(t *testing.T) {
	t.Setenv("CIVICGATE_WEBHOOKS_TRACING", "yes")
	_, _, err := telemetry.Setup(context.Background(), "civicgate-webhooks")
	if err == nil || !strings.Contains(err.Error(), "CIVICGATE_WEBHOOKS_TRACING") {
		t.Fatalf("CIVICGATE_WEBHOOKS_TRACING=yes: err = %v, want one naming the variable", err)
	}
	if got := telemetry.Switch("civicgate-webhooks"); got != "CIVICGATE_WEBHOOKS_TRACING" {
		t.Fatalf("Switch = %q", got)
	}
}
