package gqlguard_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"go.opentelemetry.io/otel/trace"

	_ "github.com/civicgate/civicgate/modules/auth"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	_ "github.com/civicgate/civicgate/modules/gqlguard"
	_ "github.com/civicgate/civicgate/modules/ratelimit"
	_ "github.com/civicgate/civicgate/modules/tracing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testotlp"
)

// tracedBody is a typical client request: variables, an operation name and
// two families (as bench/chain_test.go's).
var tracedBody = []byte(`{"query":"query Q($in: BillsInput) { bills(input: $in) { items { id officialTitle introducedDate } nextCursor } members(input: {limit: 5}) { items { member_id name } } }","variables":{"in":{"limit":10,"congress":118}},"operationName":"Q"}`)

// tracedChain loads a provisioned Caddy server (admin off, no listener used)
// whose /v1/graphql route is the shipped chain — civic_auth → civic_rate_limit
// (Redis, quota never reached) → graphql_guard → (upstream span →) an answer
// standing in for reverse_proxy — with the shipped tracing import's handlers in front when
// tracing is true (caddyfile/tracing-on.caddy), none when false (tracing-off).
func tracedChain(tb testing.TB, tracing bool) (*caddyhttp.Server, string) {
	tb.Helper()
	keysFile := filepath.Join(tb.TempDir(), "keys.json")
	iss, err := keystore.IssueToFile(keysFile, "bench", "bench", "live")
	if err != nil {
		tb.Fatal(err)
	}
	_, prefix := testenv.Redis(tb)
	order, front, upstream := "", "", ""
	if tracing { // as the shipped Caddyfiles order it, the answer standing in for reverse_proxy
		order = "order civic_trace_upstream before respond"
		front = "civic_tracing {\n\t\tspan gateway\n\t\ttrust none\n\t}"
		upstream = "civic_trace_upstream"
	}
	cfg := fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
	%s
	storage file_system %q
	civic_auth {
		keys file %q
		environment live
		identity_secret %q
		tier bench 1000000000/h bills members
	}
	civic_rate_limit {
		redis redis://%s/0
		key_prefix %q
		on_store_error closed
	}
}

http://:%d {
	%s
	handle /v1/graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			schema %q
			family bills bills bill
			family members members
		}
		%s
		respond `+"`"+`{"data":{}}`+"`"+` 200
	}
}
`, order, filepath.Join(tb.TempDir(), "storage"), keysFile, testenv.RandomSuffix(40), testenv.RedisAddr(), prefix,
		testenv.FreePort(tb), front, filepath.Join("..", "..", "backend", "schema", "records.graphqls"), upstream)
	js, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		tb.Fatalf("adapt: %v (%v)", err, warnings)
	}
	if err := caddy.Load(js, true); err != nil {
		tb.Fatalf("load: %v", err)
	}
	tb.Cleanup(func() { _ = caddy.Stop() })
	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range app.(*caddyhttp.App).Servers {
		return s, iss.Key
	}
	tb.Fatal("no server")
	return nil, ""
}

type tracedDiscard struct {
	h      http.Header
	status int
}

func (d *tracedDiscard) Header() http.Header { return d.h }
func (d *tracedDiscard) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(p), nil
}
func (d *tracedDiscard) WriteHeader(s int) {
	if d.status == 0 {
		d.status = s
	}
}

// processCPU is the process's user + system CPU time so far, in nanoseconds.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

var tracedLength = []string{strconv.Itoa(len(tracedBody))}

func serveTraced(srv *caddyhttp.Server, key string, w *tracedDiscard) int {
	r := httptest.NewRequest(http.MethodPost, "/v1/graphql", bytes.NewReader(tracedBody))
	r.Header["Content-Type"] = []string{"application/json"}
	r.Header["Content-Length"] = tracedLength
	r.Header["Authorization"] = []string{"Bearer " + key}
	clear(w.h)
	w.status = 0
	srv.ServeHTTP(w, r)
	return w.status
}

// BenchmarkTracingChain: one request through the shipped chain, tracing off
// (no tracing handler: what CIVICGATE_TRACING unset imports) and on with the
// documented sampler at 10 % and at 100 %, exporting over OTLP/HTTP to a
// receiver on loopback (the batch processor's export runs in the
// background, on the same two cores). on − off is what tracing costs a
// request; off against the commit before tracing existed is what its
// presence costs (docs/tracing.md "Cost").
//
//	go test -run '^$' -bench TracingChain -benchmem -count 5 ./modules/gqlguard/
func BenchmarkTracingChain(b *testing.B) {
	run := func(b *testing.B, tracing bool) {
		srv, key := tracedChain(b, tracing)
		w := &tracedDiscard{h: http.Header{}}
		for range 3 { // key cached, lease taken, document compiled
			if s := serveTraced(srv, key, w); s != http.StatusOK {
				b.Fatalf("status %d, headers %v", s, w.h)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU(b)
		for b.Loop() {
			if s := serveTraced(srv, key, w); s != http.StatusOK {
				b.Fatalf("status %d", s)
			}
		}
		// CPU time of the whole process (the exporter's goroutine included) per request: steadier than
		// ns/op on a machine busy with other work.
		b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.Run("off", func(b *testing.B) { run(b, false) })
	for _, ratio := range []string{"0", "0.1", "1"} {
		b.Run("on_"+ratio, func(b *testing.B) {
			b.Setenv("CIVICGATE_TRACING", "on")
			r := testotlp.StartDiscarding(b)
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
			b.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
			b.Setenv("OTEL_TRACES_SAMPLER_ARG", ratio)
			run(b, true)
		})
	}
}

// BenchmarkTracingOffChecks is all that the tracing code adds to a request
// when tracing is off: the "does the request's span record?" check of
// civic_auth, civic_rate_limit, graphql_guard and graphql_cache, on a request
// context as Caddy prepares it (BenchmarkTracingChain's off and the commit
// before tracing differ by less than its noise).
func BenchmarkTracingOffChecks(b *testing.B) {
	srv, _ := tracedChain(b, false)
	w := &tracedDiscard{h: http.Header{}}
	r := caddyhttp.PrepareRequest(httptest.NewRequest(http.MethodPost, "/v1/graphql", nil), caddy.NewReplacer(), w, srv)
	ctx := r.Context()
	b.ReportAllocs()
	for b.Loop() {
		for range 4 {
			if trace.SpanFromContext(ctx).IsRecording() {
				b.Fatal("a span records with tracing off")
			}
		}
	}
}
