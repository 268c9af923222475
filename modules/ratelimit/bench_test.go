package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// BenchmarkLocalDecision: decisions served without Redis — a key known to be
// over its limit (refusal cache), a leased token, and the memory store.
func BenchmarkLocalDecision(b *testing.B) {
	_, prefix := testenv.Redis(b)
	ctx := context.Background()
	b.Run("over_limit_cache", func(b *testing.B) {
		l := testLimiter(b, testenv.RedisAddr(), prefix, 0.02)
		set := oneRate(l, contract.Rate{Quota: 1, Window: time.Hour})
		sk := set.prefix + "over"
		for range 2 { // the second is refused by Redis and cached
			if _, err := l.take(ctx, set, sk, "over", 1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if d, _ := l.take(ctx, set, sk, "over", 1); d.granted != 0 {
				b.Fatal("allowed")
			}
		}
	})
	b.Run("leased_token", func(b *testing.B) {
		l := testLimiter(b, testenv.RedisAddr(), prefix, 0.02)
		set := oneRate(l, contract.Rate{Quota: 1_000_000_000, Window: time.Hour})
		sk := set.prefix + "lease"
		now := time.Now().UnixMicro()
		l.local.record(sk, now, 1, decision{granted: 1 << 40, n: 1, remaining: [maxRates]int64{1}}, 1, time.Hour.Microseconds())
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if d, _ := l.take(ctx, set, sk, "lease", 1); d.granted != 1 {
				b.Fatal("refused")
			}
		}
	})
	b.Run("memory_store", func(b *testing.B) {
		l := newLimiter(limiterConfig{mode: modeLocal, maxKeys: 1000})
		set := oneRate(l, contract.Rate{Quota: 1_000_000_000, Window: time.Microsecond * 1_000_000_000})
		sk := set.prefix + "mem"
		b.ReportAllocs()
		for b.Loop() {
			if d, _ := l.take(ctx, set, sk, "mem", 1); d.granted != 1 {
				b.Fatal("refused")
			}
		}
	})
}

// BenchmarkRedisDecision: one decision through Redis on loopback (leasing
// off, so every op is a round trip); reports p50/p99 latency.
func BenchmarkRedisDecision(b *testing.B) {
	_, prefix := testenv.Redis(b)
	l := testLimiter(b, testenv.RedisAddr(), prefix, 0)
	set := oneRate(l, contract.Rate{Quota: 1_000_000_000, Window: time.Hour})
	sk := set.prefix + "redis"
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		d, err := l.take(ctx, set, sk, "redis", 1)
		lat = append(lat, time.Since(t0))
		if err != nil || d.granted != 1 {
			b.Fatalf("%+v %v", d, err)
		}
	}
	if l.breaker.openUntil.Load() != 0 {
		b.Fatal("breaker opened: decisions were not served by Redis")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRedisRoundTrips: Redis round trips per 1000 admitted requests at
// 2000 req/s (paced; run with -benchtime=1x): one hot key (rate 200000/m, 2 s)
// and 1000 keys (rate 1000/m each, ~2 req/s per key, 10 s).
func BenchmarkRedisRoundTrips(b *testing.B) {
	_, prefix := testenv.Redis(b)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		keys  int
		r     contract.Rate
		total int // requests at 2000/s
	}{
		{"one_key", 1, contract.Rate{Quota: 200_000, Window: time.Minute}, 4000},
		{"1000_keys", 1000, contract.Rate{Quota: 1000, Window: time.Minute}, 20000}, // 20 per key: one lease each
	} {
		b.Run(tc.name, func(b *testing.B) {
			keys := make([]string, tc.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("%s-%d-", tc.name, i)
			}
			var admitted, calls uint64
			for n := 0; b.Loop(); n++ {
				l := testLimiter(b, testenv.RedisAddr(), prefix+strconv.Itoa(n)+":", 0.02)
				const perReq = 500 * time.Microsecond // 2000 req/s
				total := tc.total
				start := time.Now()
				for i := range total {
					if d := time.Until(start.Add(time.Duration(i) * perReq)); d > 0 {
						time.Sleep(d) // pacing to the target request rate
					}
					d, err := take1(ctx, l, keys[i%tc.keys], tc.r)
					if err != nil {
						b.Fatal(err)
					}
					admitted += uint64(d.granted)
				}
				calls += testutilCount(l)
			}
			b.ReportMetric(float64(calls)*1000/float64(admitted), "redis-calls/1000-admitted")
			b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
		})
	}
}

// BenchmarkHandlerLocal: the whole handler (placeholders, key, headers) for a
// decision served from a lease (one Redis round trip per 1000 decisions).
func BenchmarkHandlerLocal(b *testing.B) {
	_, prefix := testenv.Redis(b)
	h, req, next := benchHandler("1000000000/h", testLimiter(b, testenv.RedisAddr(), prefix, 0.02))
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		clear(w.Header())
		if err := h.ServeHTTP(w, req, next); err != nil || w.Header().Get("RateLimit") == "" {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandlerUsage: BenchmarkHandlerLocal's decision (memory store, a
// leased-size quota) with usage counting off and on, in one run: the
// difference is what counting a request per key and minute costs (target
// ≤ 100 ns; docs/benchmarks-log.md "Quotas, cost budgets and usage"). The request
// carries {civic.key_id} and {civic.org} as civic_auth publishes them.
func BenchmarkHandlerUsage(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			l := newLimiter(limiterConfig{mode: modeLocal, maxKeys: 1000})
			if on {
				l.usage = &usageSink{meter: usage.NewMeter(0)}
			}
			h, req, next := benchHandler("1000000000/h", l)
			h.Key = "{" + contract.CivicKeyID + "}" // the default, as behind civic_auth
			h.parseTemplates()
			repl := req.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
			repl.Set(contract.CivicKeyID, "key_bench")
			repl.Set(contract.CivicOrg, "org_bench")
			w := &statusWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				if err := h.ServeHTTP(w, req, next); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHandlerRefused: the whole handler answering 429 (memory store,
// the key's quota spent): headers, Retry-After and the fixed body.
func BenchmarkHandlerRefused(b *testing.B) {
	h, req, next := benchHandler("1/h", newLimiter(limiterConfig{mode: modeLocal, maxKeys: 1000}))
	w := &statusWriter{h: http.Header{}}
	if err := h.ServeHTTP(w, req, next); err != nil || w.status != 0 { // spends the quota
		b.Fatal(w.status, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		if err := h.ServeHTTP(w, req, next); err != nil || w.status != http.StatusTooManyRequests {
			b.Fatal(w.status, err)
		}
	}
}

type statusWriter struct {
	h      http.Header
	status int
}

func (s *statusWriter) Header() http.Header         { return s.h }
func (s *statusWriter) Write(p []byte) (int, error) { return len(p), nil }
func (s *statusWriter) WriteHeader(status int)      { s.status = status }

// benchHandler is a handler keyed by the X-Key header with a fixed rate on
// limiter, a request whose key is "k", and a next handler that does nothing.
func benchHandler(rate string, limiter *limiter) (*Handler, *http.Request, caddyhttp.Handler) {
	h := &Handler{Key: "{http.request.header.X-Key}", Rate: rate, Policy: "bench",
		limiter: limiter, logger: zap.NewNop(), policies: &policyCache{share: limiter.share, maxLease: limiter.maxLease}}
	h.parseTemplates()
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-Key", "k")
	repl := caddyhttp.NewTestReplacer(req)
	return h, req.WithContext(context.WithValue(req.Context(), caddy.ReplacerCtxKey, repl)), next
}
