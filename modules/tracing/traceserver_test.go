package tracing

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// TestStripTraceContext: an untrusted client's trace-context headers are all
// removed, and only a well-formed, bounded traceparent comes back as a link.
func TestStripTraceContext(t *testing.T) {
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := map[string]struct {
		hdr      http.Header
		wantLink bool
	}{
		"valid":             {http.Header{"Traceparent": {valid}, "Tracestate": {"a=b"}, "Baggage": {"k=v"}}, true},
		"only baggage":      {http.Header{"Baggage": {"k=v"}}, false},
		"garbage":           {http.Header{"Traceparent": {"garbage"}}, false},
		"zero ids":          {http.Header{"Traceparent": {"00-00000000000000000000000000000000-0000000000000000-01"}}, false},
		"twice":             {http.Header{"Traceparent": {valid, valid}}, false},
		"oversized":         {http.Header{"Traceparent": {valid + "-" + strings.Repeat("a", 300)}}, false},
		"none":              {http.Header{"Accept": {"*/*"}}, false},
		"upper-case digits": {http.Header{"Traceparent": {strings.ToUpper(valid)}}, false},
	}
	for name, c := range cases {
		sc, ok := stripTraceContext(c.hdr)
		if ok != c.wantLink {
			t.Errorf("%s: link %v, want %v", name, ok, c.wantLink)
		}
		if ok && (sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !sc.IsSampled()) {
			t.Errorf("%s: link %v", name, sc)
		}
		for _, k := range []string{"Traceparent", "Tracestate", "Baggage"} {
			if _, left := c.hdr[k]; left {
				t.Errorf("%s: %s left on the request", name, k)
			}
		}
		if name == "none" && c.hdr.Get("Accept") != "*/*" {
			t.Errorf("other headers touched: %v", c.hdr)
		}
	}
}

func TestTrustedPeers(t *testing.T) {
	nets, err := parseTrust([]string{"10.0.0.0/8", "192.0.2.7", "none"})
	if err != nil {
		t.Fatal(err)
	}
	h := &TraceServer{nets: nets}
	for addr, want := range map[string]bool{
		"10.1.2.3:5000": true, "192.0.2.7:1": true, "192.0.2.8:1": false, "127.0.0.1:80": false,
		"[::ffff:10.0.0.1]:80": true, "not an address": false, "[::1]:80": false,
	} {
		if got := h.trusted(addr); got != want {
			t.Errorf("trusted(%q) = %v, want %v", addr, got, want)
		}
	}
	if (&TraceServer{}).trusted("10.1.2.3:5000") {
		t.Error("no trust list trusts a peer")
	}
	private, err := parseTrust([]string{"private_ranges"})
	if err != nil || !(&TraceServer{nets: private}).trusted("[::1]:80") || (&TraceServer{nets: private}).trusted("8.8.8.8:53") {
		t.Errorf("private_ranges: %v %v", private, err)
	}
	if _, err := parseTrust([]string{"10.0.0.0/33"}); err == nil {
		t.Error("a bad prefix parsed")
	}
}

// TestServerAttrsHoldNoKeyAndStayShort: what the server span records of the
// client's text is cut to 256 bytes (on a rune boundary) with keys redacted.
func TestServerAttrsHoldNoKeyAndStayShort(t *testing.T) {
	const key = "cg_live_4fJ8sK2mQ9xW7vB3nL6pR1tY5zA0cE8d"
	r := &http.Request{
		Method: "POST", Host: "api.example.org", ProtoMajor: 1, ProtoMinor: 1,
		URL:    &url.URL{Path: "/v1/graphql/" + key + "/" + strings.Repeat("é", 300), RawQuery: "api_key=" + key},
		Header: http.Header{"User-Agent": {"client " + key + strings.Repeat("x", 1000)}, "Authorization": {"Bearer " + key}},
	}
	for _, a := range serverAttrs(r) {
		v := a.Value.String()
		if strings.Contains(v, key) || strings.Contains(v, key[len(key)-20:]) {
			t.Errorf("%s holds the key: %q", a.Key, v)
		}
		if len(v) > maxClientText || !utf8.ValidString(v) {
			t.Errorf("%s: %d bytes, valid UTF-8 %v", a.Key, len(v), utf8.ValidString(v))
		}
	}
}

// TestTracingProviderAcrossReloads: civic_tracing's tracer provider outlives
// a config reload (the usage pool) and is flushed when Caddy stops: both
// requests' server spans reach the OTLP receiver.
func TestTracingProviderAcrossReloads(t *testing.T) {
	r := testotlp.Start(t)
	t.Setenv("CIVICGATE_TRACING", "on")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "60000") // only Stop's flush exports
	port := testenv.FreePort(t)
	load := func(body string) *caddyhttp.Server {
		cfg := fmt.Sprintf("{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n}\nhttp://:%d {\n\tcivic_tracing {\n\t\tspan reload\n\t}\n\trespond %q\n}\n", port, body)
		js, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := caddy.Load(js, true); err != nil {
			t.Fatal(err)
		}
		app, err := caddy.ActiveContext().App("http")
		if err != nil {
			t.Fatal(err)
		}
		return app.(*caddyhttp.App).Servers["srv0"]
	}
	for _, body := range []string{"first", "second"} {
		srv := load(body)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Body.String() != body {
			t.Fatalf("answer %q, want %q", w.Body.String(), body)
		}
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	r.WaitFor(t, 10*time.Second, func(spans []testotlp.Span) bool {
		n := 0
		for _, s := range spans {
			if s.Name == "reload" && s.Service == "civicgate" && s.Attrs["http.response.status_code"] == "200" {
				n++
			}
		}
		return n == 2
	})
}
