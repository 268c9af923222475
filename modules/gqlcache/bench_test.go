package gqlcache

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// checkedBody is the body graphql_guard hands on: a bytes.Reader that closes.
type checkedBody struct{ bytes.Reader }

func (*checkedBody) Close() error { return nil }

// discard is a ResponseWriter whose header map is reused.
type discard struct {
	hdr    http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header         { return d.hdr }
func (d *discard) WriteHeader(status int)      { d.status = status }
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// hitFixture is a handler with one stored answer, and a request (with the
// guard's decoded request and civic_auth's placeholder set) that hits it.
type hitFixture struct {
	h    *Handler
	req  *http.Request
	body *checkedBody
	raw  []byte
	w    *discard
	next caddyhttp.Handler
}

func newHitFixture(tb testing.TB) *hitFixture {
	in := newInstance(64<<20, 1<<20, nil)
	h := &Handler{inst: in, ttl: time.Minute, maxEntry: 1 << 20, now: time.Now,
		scope: []caddyopt.Template{caddyopt.ParseTemplate("{" + contract.CivicFamilies + "}")}}
	repl := caddy.NewReplacer()
	repl.Set(contract.CivicFamilies, "bills,members,votes")
	raw := []byte(`{"query":"query Bill($id: ID!) { bill(id: $id) { title sponsors { name } } }","variables":{"id":"hr-118-1"},"operationName":"Bill"}`)
	f := &hitFixture{h: h, raw: raw, body: &checkedBody{}, w: &discard{hdr: http.Header{}}}
	// The request as graphql_guard publishes it: its members are slices of
	// the checked body.
	decoded := contract.GraphQLRequest{Query: raw[10:76], Variables: raw[90:107], OperationName: raw[125:129],
		Operation: contract.GraphQLOperation{Type: "query", Name: "Bill", Families: []string{"bills", "members"},
			DocumentHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}
	ctx := withDecoded(context.WithValue(context.Background(), caddy.ReplacerCtxKey, repl), decoded)
	f.req = (&http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/graphql"}, Header: http.Header{}, Body: f.body}).
		WithContext(ctx)
	calls := 0
	f.next = caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		calls++
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write([]byte(`{"data":{"bill":{"title":"An Act","sponsors":[{"name":"A. Member"}]}}}`))
		return err
	})
	f.serve(tb) // the miss that stores it
	f.serve(tb)
	if calls != 1 || f.w.hdr.Get("Cache-Status") != "civicgate; hit; ttl=60" {
		tb.Fatalf("fixture: %d upstream calls, Cache-Status %q", calls, f.w.hdr.Get("Cache-Status"))
	}
	return f
}

func (f *hitFixture) serve(tb testing.TB) {
	f.body.Reset(f.raw)
	clear(f.w.hdr)
	if err := f.h.ServeHTTP(f.w, f.req, f.next); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkHit is a hit through the handler: key (scope, document, name,
// variables and extensions of the guard's decoded request, tag
// generations), lookup, headers, body. The guard's placeholders and decoded
// request are precomputed.
func BenchmarkHit(b *testing.B) {
	f := newHitFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.serve(b)
	}
}

// BenchmarkHitParallel is BenchmarkHit on every core, each with its own
// request, against one store.
func BenchmarkHitParallel(b *testing.B) {
	shared := newHitFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		f := newHitFixture(b)
		f.h = shared.h
		f.serve(b)
		for pb.Next() {
			f.serve(b)
		}
	})
}

// TestHitAllocations keeps the hit path within its budget of 5 allocations.
func TestHitAllocations(t *testing.T) {
	f := newHitFixture(t)
	if n := testing.AllocsPerRun(200, func() { f.serve(t) }); n > 5 {
		t.Fatalf("%v allocations per hit, budget 5", n)
	}
}

// BenchmarkSharedHit is BenchmarkHit answered from Redis (the shared Redis
// of the tests, on loopback): each iteration empties the memory first, so
// the request is a local miss, a Redis MGET, the entry's decoding and check,
// and its insertion in memory.
func BenchmarkSharedHit(b *testing.B) {
	_, prefix := testenv.Redis(b)
	benchSharedHit(b, "redis://"+testenv.RedisAddr()+"/0", prefix)
}

// BenchmarkSharedHitCluster is BenchmarkSharedHit on a 3-master Redis
// Cluster of its own: still one MGET, on the node of the entry's slot.
func BenchmarkSharedHitCluster(b *testing.B) {
	benchSharedHit(b, testenv.StartRedisCluster(b, 3, 0).URL(), "cache:")
}

func benchSharedHit(b *testing.B, redisURL, prefix string) {
	f := newHitFixture(b)
	in := newInstance(64<<20, 1<<20, &listenConfig{feed: "change_events"}) // not started: up by hand
	in.up.Store(true)
	in.shared, _ = openTestShared(b, redisURL, prefix, time.Second)
	b.Cleanup(func() { _ = in.Destruct() })
	f.h.inst = in
	f.serve(b) // the miss that stores it
	f.serve(b)
	if got := f.w.hdr.Get("Cache-Status"); got != "civicgate; hit; ttl=60" {
		b.Fatalf("Cache-Status %q", got)
	}
	in.store.flush()
	f.serve(b)
	if got := f.w.hdr.Get("Cache-Status"); got != "civicgate; hit; ttl=60"+paramShared {
		b.Fatalf("Cache-Status %q", got)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		in.store.flush()
		f.serve(b)
	}
}
