package mirror_test

import (
	"context"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/internal/telemetry"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// TestSyncRunTraced: a traced run makes a sync.run root span (family and source as attributes, its Stats at
// the end), a sync.chunk child per chunk and a sync.mark_deleted child, and every change event it writes
// carries the traceparent of the span that wrote it; an untraced run writes NULL.
func TestSyncRunTraced(t *testing.T) {
	r := testotlp.Start(t)
	t.Setenv("RECORDSD_TRACING", "on")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tp, shutdown, err := telemetry.Setup(context.Background(), "recordsd")
	if err != nil {
		t.Fatal(err)
	}
	pool := newDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// An untraced run first: its event has no traceparent.
	if _, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.Bills, Src: "t", Items: []mirror.Item{bill(9, "gone soon")}},
		mirror.Options{}); err != nil {
		t.Fatal(err)
	}
	items := []mirror.Item{bill(1, "one"), bill(2, "two"), bill(3, "three")}
	st, err := mirror.New(pool).Run(ctx, &mirror.ItemsSource{Fam: mirror.Bills, Src: "t", Items: items, BatchSize: 2},
		mirror.Options{FullSnapshot: true, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if st.Created != 3 || st.Deleted != 1 {
		t.Fatalf("stats %+v, want 3 created and 1 deleted", st)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := shutdown(sctx); err != nil {
		t.Fatal(err)
	}

	spans := r.Spans()
	parents := map[string]string{} // traceparent → span name
	var run testotlp.Span
	for _, s := range spans {
		if s.Name == mirror.SpanSyncRun {
			run = s
		}
	}
	if run.SpanID == "" || run.ParentSpanID != "" || run.Attrs["civicgate.sync.family"] != "bills" ||
		run.Attrs["civicgate.sync.source"] != "t" || run.Attrs["civicgate.sync.created"] != "3" || run.Attrs["civicgate.sync.deleted"] != "1" {
		t.Fatalf("sync.run span: %+v\n%s", run, testotlp.Describe(spans))
	}
	chunks := 0
	for _, s := range spans {
		switch s.Name {
		case mirror.SpanSyncChunk, mirror.SpanSyncMarkDeleted:
			if s.ParentSpanID != run.SpanID || s.TraceID != run.TraceID {
				t.Errorf("%s is not sync.run's child: %+v", s.Name, s)
			}
			parents["00-"+s.TraceID+"-"+s.SpanID+"-01"] = s.Name
			if s.Name == mirror.SpanSyncChunk {
				chunks++
			}
		}
	}
	if chunks != 2 {
		t.Fatalf("want 2 sync.chunk spans, got:\n%s", testotlp.Describe(spans))
	}

	rows, err := pool.Query(ctx, `SELECT record_id, type, traceparent FROM change_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, typ string
		var tp *string
		if err := rows.Scan(&id, &typ, &tp); err != nil {
			t.Fatal(err)
		}
		n++
		switch {
		case n == 1:
			if tp != nil {
				t.Errorf("the untraced run's event has traceparent %q", *tp)
			}
		case tp == nil:
			t.Errorf("event %s %s of the traced run has no traceparent", typ, id)
		case typ == "deleted" && parents[*tp] != mirror.SpanSyncMarkDeleted, typ != "deleted" && parents[*tp] != mirror.SpanSyncChunk:
			t.Errorf("event %s %s: traceparent %q is not its writer span's (%v)", typ, id, *tp, parents)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("%d change events, want 5 (1 untraced create, 3 creates, 1 delete)", n)
	}
}
