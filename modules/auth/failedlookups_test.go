package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestFailLimiterRate: failed_lookups reads the one rate syntax
// (contract.ParseRate) — N/d and N/<duration> included, like tier lines and
// civic_rate_limit — as one lookup per window/N after a burst of N.
func TestFailLimiterRate(t *testing.T) {
	for in, want := range map[string]time.Duration{"20/m": time.Minute / 20, "1/s": time.Second, "3600/h": time.Second,
		"20/d": 24 * time.Hour / 20, "20/min": time.Minute / 20, "5/2s": 2 * time.Second / 5} {
		l, err := newFailLimiter(in, 10)
		if err != nil || time.Duration(l.interval) != want {
			t.Errorf("%s: %v (%v), want one per %s", in, l, err, want)
		}
	}
	for _, in := range []string{"0/m", "-1/m", "20", "m", "20/fortnight", "99999999999/s"} {
		if _, err := newFailLimiter(in, 10); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if l, err := newFailLimiter("off", 10); l != nil || err != nil {
		t.Fatalf("off: %v %v", l, err)
	}
	if l, err := newFailLimiter("", 10); err != nil || l.interval != int64(time.Second) || l.tolerance != 59*int64(time.Second) {
		t.Fatalf("default: %+v %v, want 60/m", l, err)
	}
}

func TestFailLimiterBurstWaitRefund(t *testing.T) {
	l, err := newFailLimiter("3/m", 10)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("203.0.113.7")
	t0 := time.Unix(1_800_000_000, 0)
	for i := 0; i < 3; i++ {
		if _, ok := l.reserve(a, t0); !ok {
			t.Fatalf("failure %d refused inside the burst", i+1)
		}
	}
	wait, ok := l.reserve(a, t0)
	if ok || wait != 20*time.Second {
		t.Fatalf("4th: ok=%v wait=%s, want refused for 20s", ok, wait)
	}
	if wait, ok := l.reserve(a, t0.Add(19*time.Second)); ok || wait != time.Second {
		t.Fatalf("after 19s: ok=%v wait=%s", ok, wait)
	}
	if _, ok := l.reserve(a, t0.Add(20*time.Second)); !ok {
		t.Fatal("not allowed again after the wait")
	}
	if _, ok := l.reserve(a, t0.Add(20*time.Second)); ok {
		t.Fatal("a second one allowed at once")
	}
	l.refund(a) // the last reservation's lookup found a key: it does not count
	if _, ok := l.reserve(a, t0.Add(20*time.Second)); !ok {
		t.Fatal("refund did not give the reservation back")
	}
	if _, ok := l.reserve(netip.MustParseAddr("198.51.100.1"), t0); !ok {
		t.Fatal("another client limited")
	}
}

func TestFailLimiterTableBounded(t *testing.T) {
	l, err := newFailLimiter("1/h", 3)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}) }
	for i := 1; i <= 3; i++ {
		if _, ok := l.reserve(addr(i), now); !ok {
			t.Fatal(i)
		}
	}
	l.reserve(addr(1), now) // refused, but seen: 2 is now the oldest
	l.reserve(addr(4), now) // table full: 2 is dropped
	if got := seenOrder(l); !slices.Equal(got, []netip.Addr{addr(4), addr(1), addr(3)}) {
		t.Fatalf("table %v, want 4, 1, 3", got)
	}
	if _, ok := l.reserve(addr(1), now); ok {
		t.Fatal("the recently seen client lost its state")
	}
	l.refund(addr(3)) // a refund is no sighting: 3 stays the oldest
	l.reserve(addr(5), now)
	if got := seenOrder(l); !slices.Equal(got, []netip.Addr{addr(5), addr(1), addr(4)}) {
		t.Fatalf("table %v, want 5, 1, 4", got)
	}
	for i := 6; i < 1000; i++ {
		l.reserve(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now)
	}
	if n := len(seenOrder(l)); n != 3 || l.tats.Len() != 3 {
		t.Fatalf("%d addresses tracked (%d in the recency list), want 3", l.tats.Len(), n)
	}
}

// seenOrder lists l's addresses from the most recently seen.
func seenOrder(l *failLimiter) []netip.Addr {
	var out []netip.Addr
	for a := range l.tats.All() {
		out = append(out, a)
	}
	return out
}

// TestFailLimiterFloodAllocatesNothing: once the table is full, a flood of
// new addresses takes over the oldest slots instead of allocating.
func TestFailLimiterFloodAllocatesNothing(t *testing.T) {
	l, err := newFailLimiter("1/h", 64)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	i := 0
	flood := func() {
		l.reserve(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), now)
		i++
	}
	for range 64 {
		flood()
	}
	if n := testing.AllocsPerRun(1000, flood); n != 0 {
		t.Fatalf("%v allocations per new address", n)
	}
}

func TestClientAddr(t *testing.T) {
	for _, c := range []struct{ varIP, remote, want string }{
		{"203.0.113.7", "192.0.2.1:1", "203.0.113.7"},
		{"", "192.0.2.1:1", "192.0.2.1"},
		{"::ffff:203.0.113.7", "", "203.0.113.7"},
		{"2001:db8:1:2:aaaa::1", "", "2001:db8:1:2::"},
		{"2001:db8:1:2:bbbb::9", "", "2001:db8:1:2::"},
		{"fe80::1%eth0", "", "fe80::"},
		{"not an ip", "", "invalid IP"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		if c.varIP != "" {
			r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: c.varIP}))
		}
		if got := clientAddr(r).String(); got != c.want {
			t.Errorf("%q/%q: %s, want %s", c.varIP, c.remote, got, c.want)
		}
	}
}

// TestFailedLookupLimitHandler: over the limit, a client's keys that are not
// cached as known get 429 without a lookup; its cached known key and other
// clients are unaffected; concurrent floods cannot pass the check together.
func TestFailedLookupLimitHandler(t *testing.T) {
	known, uncached := wellFormed, "cg_live_"+wellFormed[9:]+"Z"
	st := &countingStore{store: indexStore(map[keystore.Hash]keystore.Record{
		keystore.HashKey(known):    activeRecord,
		keystore.HashKey(uncached): activeRecord,
	})}
	a, _ := unitApp(t, st, "3/m")
	h := &Handler{app: a, logger: a.logger}
	throttledBefore := counterValue(t, a, outcomeThrottled) // counters are the process's: other tests count too
	bearer := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	randomKey := func() string {
		k, err := keystore.NewKey("live")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	const clientA, clientB = "203.0.113.7", "198.51.100.9"

	if _, passed := serve(h, "/bills", clientA, bearer(known)...); !passed {
		t.Fatal("known key refused")
	}
	for i := 0; i < 3; i++ {
		if w, _ := serve(h, "/bills", clientA, bearer(randomKey())...); w.Code != 401 || w.Body.String() != `{"error":"Invalid API key"}` {
			t.Fatalf("unknown key %d: %d %q", i+1, w.Code, w.Body)
		}
	}
	if n := st.n.Load(); n != 4 {
		t.Fatalf("%d lookups, want 4", n)
	}
	w, passed := serve(h, "/bills", clientA, bearer(randomKey())...)
	if passed || w.Code != 429 || w.Body.String() != `{"error":"Rate limit exceeded"}` || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("over the limit: %d %q %v", w.Code, w.Body, w.Header())
	}
	if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || s < 1 || s > 20 {
		t.Fatalf("Retry-After %q, want 1..20 whole seconds", w.Header().Get("Retry-After"))
	}
	if w, _ := serve(h, "/bills", clientA, bearer(uncached)...); w.Code != 429 {
		t.Fatalf("a valid key not cached yet, over the limit: %d %q, want 429", w.Code, w.Body)
	}
	if n := st.n.Load(); n != 4 {
		t.Fatalf("%d lookups after the refusals, want still 4", n)
	}
	if _, passed := serve(h, "/bills", clientA, bearer(known)...); !passed {
		t.Fatal("the client's cached known key refused")
	}
	if w, _ := serve(h, "/bills", clientB, bearer(randomKey())...); w.Code != 401 {
		t.Fatalf("another client: %d %q", w.Code, w.Body)
	}
	if got := counterValue(t, a, outcomeThrottled) - throttledBefore; got != 2 {
		t.Fatalf("throttled counted %v, want 2", got)
	}

	// 50 distinct unknown keys at once from a fresh client: exactly the burst
	// reaches the store, because the check reserves before the lookup.
	before := st.n.Load()
	var wg sync.WaitGroup
	codes := make(chan int, 50)
	for i := 0; i < 50; i++ {
		k := randomKey()
		wg.Go(func() {
			w, _ := serve(h, "/bills", "192.0.2.200", bearer(k)...)
			codes <- w.Code
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[401] != 3 || count[429] != 47 || st.n.Load()-before != 3 {
		t.Fatalf("concurrent flood: %v, %d lookups; want 3×401, 47×429, 3 lookups", count, st.n.Load()-before)
	}
}

// TestFailedLookupChargedOnce: concurrent requests for one unknown key share
// one lookup, and only that lookup counts against the client.
func TestFailedLookupChargedOnce(t *testing.T) {
	const limit = 5
	g := &gatedStore{store: indexStore(nil), entered: make(chan struct{})}
	a, _ := unitApp(t, g, strconv.Itoa(limit)+"/m")
	h := &Handler{app: a, logger: a.logger}
	key := func() string {
		k, err := keystore.NewKey("live")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	same := key()
	var entered sync.WaitGroup
	entered.Add(limit)
	go func() { entered.Wait(); close(g.entered) }()
	var wg sync.WaitGroup
	for i := 0; i < limit; i++ {
		wg.Go(func() {
			entered.Done()
			if w, _ := serve(h, "/bills", "192.0.2.50", "Authorization", "Bearer "+same); w.Code != 401 {
				t.Errorf("shared unknown key: %d %q", w.Code, w.Body)
			}
		})
	}
	wg.Wait()
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("%d lookups for one key, want 1", n)
	}
	for i := 1; i < limit; i++ { // the shared lookup used one of the client's 5
		if w, _ := serve(h, "/bills", "192.0.2.50", "Authorization", "Bearer "+key()); w.Code != 401 {
			t.Fatalf("distinct unknown key %d: %d %q", i, w.Code, w.Body)
		}
	}
	if w, _ := serve(h, "/bills", "192.0.2.50", "Authorization", "Bearer "+key()); w.Code != 429 {
		t.Fatalf("over the limit: %d %q", w.Code, w.Body)
	}
}

// BenchmarkFailLimiterFlood: a failed lookup from a new address each time,
// over a full table (the default size).
func BenchmarkFailLimiterFlood(b *testing.B) {
	l, err := newFailLimiter("", DefaultFailedLookupClients)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if _, ok := l.reserve(a, now); ok {
			l.refund(a)
		}
		i++
	}
}
