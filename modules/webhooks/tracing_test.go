package webhooks

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testotlp"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
)

// TestAppTracesDeliveries: with CIVICGATE_TRACING=on the app, as Caddy runs it, exports a webhook.deliver
// span (service civicgate-webhooks) linked to the traceparent its change event was written with, and the
// receiver gets that delivery's traceparent.
func TestAppTracesDeliveries(t *testing.T) {
	r := testotlp.Start(t)
	for k, v := range map[string]string{
		"CIVICGATE_TRACING": "on", "OTEL_EXPORTER_OTLP_ENDPOINT": r.Endpoint(), "OTEL_TRACES_EXPORTER": "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_TRACES_SAMPLER": "always_on", "OTEL_SERVICE_NAME": "",
		"OTEL_BSP_SCHEDULE_DELAY": "50", // ms: export promptly (the test waits for the span)
	} {
		t.Setenv(k, v)
	}
	db := feedtest.New(t)
	db.AddTraceparentColumn(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iss, err := keystore.Issue(ctx, db.Pool, "acme", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, db.DSN, "insecure_allow_loopback")
	rc := newHookReceiver(t)
	want(t, g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"`+rc.srv.URL+`/hook","families":["bills"]}`), 201, "")

	const writerTrace, writerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	seq := db.InsertTraced(t, "bills", "00-"+writerTrace+"-"+writerSpan+"-01")
	got := rc.waitN(t, 1)
	sent := got[0].h.Get("traceparent")
	spans := r.WaitFor(t, 20*time.Second, func(spans []testotlp.Span) bool {
		for _, s := range spans {
			if s.Name == "webhook.deliver" {
				return true
			}
		}
		return false
	})
	for _, s := range spans {
		if s.Name != "webhook.deliver" {
			continue
		}
		if s.Service != "civicgate-webhooks" || s.Attrs["civicgate.change_event.id"] != strconv.FormatInt(seq, 10) ||
			len(s.Links) != 1 || s.Links[0].TraceID != writerTrace || s.Links[0].SpanID != writerSpan {
			t.Fatalf("delivery span: %+v", s)
		}
		if !strings.HasPrefix(sent, "00-"+s.TraceID+"-"+s.SpanID+"-") {
			t.Fatalf("the receiver got traceparent %q, not the delivery span's %s/%s", sent, s.TraceID, s.SpanID)
		}
	}
}
