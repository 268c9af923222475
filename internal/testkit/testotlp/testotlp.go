// Package testotlp is an OTLP/HTTP trace receiver for tests: a real HTTP server on 127.0.0.1 that decodes the
// protobuf ExportTraceServiceRequest an OpenTelemetry SDK exporter sends (gzip-compressed or not) and keeps
// the spans, flattened, for assertions.
//
//	r := testotlp.Start(t)
//	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
//	...
//	r.WaitFor(t, 10*time.Second, func(spans []testotlp.Span) bool { ... })
package testotlp

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	TraceID, SpanID, ParentSpanID string // lower-case hex; ParentSpanID "" for a root span
	Name                          string
	Service                       string            // the resource's service.name
	Kind                          string            // "server", "client", "internal", "producer", "consumer"
	Status                        string            // "unset", "ok" or "error"
	StatusMessage                 string            // the status description
	Attrs                         map[string]string // values as text: see Value
	Links                         []Link
	Start, End                    time.Time
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
	Attrs           map[string]string
}

// Receiver is a running OTLP/HTTP trace receiver.
type Receiver struct {
	srv      *http.Server
	endpoint string
	discard  bool

	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed and replaced whenever spans arrive
	bad     []string      // why requests were refused, reported by WaitFor
}

// Start starts a receiver that keeps every span; it stops when the test ends.
func Start(tb testing.TB) *Receiver { return start(tb, false) }

// StartDiscarding starts a receiver that answers every export with success and keeps nothing (benchmarks).
func StartDiscarding(tb testing.TB) *Receiver { return start(tb, true) }

func start(tb testing.TB, discard bool) *Receiver {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testotlp: listen: %v", err)
	}
	r := &Receiver{endpoint: "http://" + ln.Addr().String(), discard: discard, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", r.serveTraces)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	tb.Cleanup(func() { _ = r.srv.Close() })
	return r
}

// Endpoint is the base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces).
func (r *Receiver) Endpoint() string { return r.endpoint }

// TracesEndpoint is the full URL for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
func (r *Receiver) TracesEndpoint() string { return r.endpoint + "/v1/traces" }

// Spans returns a copy of the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// WaitFor waits until cond holds for the spans received so far, or fails the test after within, listing the
// spans it had.
func (r *Receiver) WaitFor(tb testing.TB, within time.Duration, cond func([]Span) bool) []Span {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		spans, changed, bad := append([]Span(nil), r.spans...), r.changed, append([]string(nil), r.bad...)
		r.mu.Unlock()
		if cond(spans) {
			return spans
		}
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("testotlp: condition not met within %v; %d spans received:\n%s\nrefused requests: %v",
				within, len(spans), Describe(spans), bad)
			return nil
		}
	}
}

// Describe lists spans one a line (service, name, ids), for failure messages.
func Describe(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s %q trace=%s span=%s parent=%s attrs=%v links=%d\n",
			s.Service, s.Name, s.TraceID, s.SpanID, s.ParentSpanID, s.Attrs, len(s.Links))
	}
	return b.String()
}

func (r *Receiver) refuse(w http.ResponseWriter, status int, why string) {
	r.mu.Lock()
	r.bad = append(r.bad, why)
	r.mu.Unlock()
	http.Error(w, why, status)
}

func (r *Receiver) serveTraces(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		r.refuse(w, http.StatusMethodNotAllowed, "method "+req.Method)
		return
	}
	if r.discard {
		_, _ = io.Copy(io.Discard, req.Body)
		writeOK(w)
		return
	}
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt != "application/x-protobuf" {
		r.refuse(w, http.StatusUnsupportedMediaType, "content type "+req.Header.Get("Content-Type"))
		return
	}
	var body io.Reader = req.Body
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			r.refuse(w, http.StatusBadRequest, "gzip: "+err.Error())
			return
		}
		defer zr.Close()
		body = zr
	default:
		r.refuse(w, http.StatusUnsupportedMediaType, "content encoding "+enc)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		r.refuse(w, http.StatusBadRequest, "read: "+err.Error())
		return
	}
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		r.refuse(w, http.StatusBadRequest, "decode: "+err.Error())
		return
	}
	spans := flatten(&msg)
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	writeOK(w)
}

func writeOK(w http.ResponseWriter) {
	b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func flatten(msg *collectortrace.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range msg.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					TraceID:       hex.EncodeToString(s.GetTraceId()),
					SpanID:        hex.EncodeToString(s.GetSpanId()),
					ParentSpanID:  hex.EncodeToString(s.GetParentSpanId()),
					Name:          s.GetName(),
					Service:       service,
					Kind:          strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")),
					Status:        strings.ToLower(strings.TrimPrefix(s.GetStatus().GetCode().String(), "STATUS_CODE_")),
					StatusMessage: s.GetStatus().GetMessage(),
					Attrs:         attrs(s.GetAttributes()),
					Start:         time.Unix(0, int64(s.GetStartTimeUnixNano())),
					End:           time.Unix(0, int64(s.GetEndTimeUnixNano())),
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{
						TraceID: hex.EncodeToString(l.GetTraceId()),
						SpanID:  hex.EncodeToString(l.GetSpanId()),
						Attrs:   attrs(l.GetAttributes()),
					})
				}
				out = append(out, sp)
			}
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = Value(kv.GetValue())
	}
	return m
}

// Value renders an attribute value as text: strings as they are, numbers and booleans as Go formats them,
// arrays as their elements joined by ",", bytes as hex, a key-value list as "k=v" joined by ",".
func Value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, Value(e))
		}
		return strings.Join(parts, ",")
	case *commonpb.AnyValue_KvlistValue:
		parts := make([]string, 0, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			parts = append(parts, kv.GetKey()+"="+Value(kv.GetValue()))
		}
		return strings.Join(parts, ",")
	}
	return ""
}
