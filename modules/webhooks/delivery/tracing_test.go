package delivery_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
	"github.com/civicgate/civicgate/modules/webhooks/delivery"
)

// tracing turns tracing on for the webhooks service into a test receiver; flush exports what has ended.
func tracing(t *testing.T) (trace.TracerProvider, *testotlp.Receiver, func()) {
	t.Helper()
	r := testotlp.Start(t)
	for k, v := range map[string]string{
		"CIVICGATE_TRACING": "on", "OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint(), "OTEL_TRACES_EXPORTER": "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_TRACES_SAMPLER": "always_on", "OTEL_SERVICE_NAME": "",
	} {
		t.Setenv(k, v)
	}
	tp, shutdown, err := telemetry.Setup(context.Background(), "civicgate-webhooks")
	if err != nil {
		t.Fatal(err)
	}
	done := false
	flush := func() {
		if done {
			return
		}
		done = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("tracer shutdown: %v", err)
		}
	}
	t.Cleanup(flush)
	return tp, r, flush
}

// TestDeliverySpanLinksToChangeEvent: an event written inside a traced span (its traceparent in
// change_events) is delivered in a webhook.deliver span of a trace of its own that links to that span, with
// the event, endpoint and status code as attributes; the receiver gets the delivery's traceparent; an event
// written untraced is delivered in a span without a link.
func TestDeliverySpanLinksToChangeEvent(t *testing.T) {
	tp, r, flush := tracing(t)
	e := newEnv(t)
	e.db.AddTraceparentColumn(t)
	e.store.ReadTraceparents()
	rc := newReceiver(t)
	ep, _ := e.endpoint(rc.URL(), "bills")

	_, writer := tp.Tracer("test").Start(context.Background(), "sync.chunk")
	wsc := writer.SpanContext()
	traced := e.db.InsertTraced(t, "bills", "00-"+wsc.TraceID().String()+"-"+wsc.SpanID().String()+"-01")
	writer.End()
	untraced := e.db.Insert(t, "bills", 1)[0]
	if n := e.drain(e.dispatcher(dev, func(c *delivery.Config) { c.TracerProvider = tp })); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
	flush()

	spans := r.Spans()
	byEvent := map[string]testotlp.Span{}
	for _, s := range spans {
		if s.Name == delivery.SpanDeliver {
			byEvent[s.Attrs["civicgate.change_event.id"]] = s
		}
	}
	ts, us := byEvent[strconv.FormatInt(traced, 10)], byEvent[strconv.FormatInt(untraced, 10)]
	if ts.SpanID == "" || us.SpanID == "" {
		t.Fatalf("want a webhook.deliver span per event (%d, %d), got:\n%s", traced, untraced, testotlp.Describe(spans))
	}
	if len(ts.Links) != 1 || ts.Links[0].TraceID != wsc.TraceID().String() || ts.Links[0].SpanID != wsc.SpanID().String() {
		t.Fatalf("the traced event's delivery span does not link to its writer %s/%s: %+v", wsc.TraceID(), wsc.SpanID(), ts.Links)
	}
	if ts.TraceID == wsc.TraceID().String() || ts.ParentSpanID != "" {
		t.Fatalf("the delivery span is not the root of a trace of its own: %+v", ts)
	}
	if len(us.Links) != 0 {
		t.Fatalf("the untraced event's delivery span has links: %+v", us.Links)
	}
	for _, s := range []testotlp.Span{ts, us} {
		if s.Service != "civicgate-webhooks" || s.Kind != "client" || s.Attrs["civicgate.webhook.endpoint_id"] != ep.ID ||
			s.Attrs["http.response.status_code"] != "204" || s.Attrs["civicgate.webhook.outcome"] != "delivered" ||
			s.Attrs["civicgate.webhook.attempt"] != "1" || s.Attrs["civicgate.webhook.family"] != "bills" {
			t.Errorf("delivery span: %+v", s)
		}
		for k, v := range s.Attrs {
			if v == rc.URL() {
				t.Errorf("delivery span attribute %s is the endpoint URL", k)
			}
		}
	}
	sent := map[string]bool{}
	for _, q := range rc.requests() {
		sent[q.header.Get("traceparent")] = true
	}
	for _, s := range []testotlp.Span{ts, us} {
		if want := "00-" + s.TraceID + "-" + s.SpanID + "-01"; !sent[want] {
			t.Errorf("no request carried the delivery span's traceparent %s (sent %v)", want, sent)
		}
	}
}

// TestDeliveryTracedWithoutTraceparentColumn: a change feed without the traceparent column (an older
// backend) is still delivered, traced, without links.
func TestDeliveryTracedWithoutTraceparentColumn(t *testing.T) {
	tp, r, flush := tracing(t)
	e := newEnv(t)
	e.store.ReadTraceparents()
	rc := newReceiver(t)
	e.endpoint(rc.URL(), "bills")
	e.db.Insert(t, "bills", 2)
	d := e.dispatcher(dev, func(c *delivery.Config) { c.TracerProvider = tp })
	if n := e.drain(d); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
	e.db.Insert(t, "bills", 1) // the column is not looked for again at once
	if n := e.drain(d); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	flush()
	n := 0
	for _, s := range r.Spans() {
		if s.Name == delivery.SpanDeliver {
			n++
			if len(s.Links) != 0 || s.Attrs["civicgate.webhook.outcome"] != "delivered" {
				t.Errorf("delivery span: %+v", s)
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d webhook.deliver spans, want 3:\n%s", n, testotlp.Describe(r.Spans()))
	}
}
