package reliability

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// soakDuration is CIVICGATE_SOAK (a Go duration; `make soak` sets it, 10m by
// default), or a short run for `make test`.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("CIVICGATE_SOAK")
	if v == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Second {
		t.Fatalf("CIVICGATE_SOAK=%q: want a Go duration of at least 10s (e.g. 10m)", v)
	}
	return d
}

// soakCalls is the mixed traffic: valid requests of every kind and invalid
// ones, each with its exact expected answer.
func soakCalls(keys []string, free string) []call {
	const js = "application/json"
	var calls []call
	for _, k := range keys {
		calls = append(calls, validCalls(k)...)
	}
	k := keys[0]
	bad := []call{
		{name: "no token", method: "POST", path: "/v1/graphql", ctype: js, body: billsQuery,
			want: map[int]string{401: `{"error":"Missing bearer token"}`}},
		{name: "unknown key", method: "GET", path: "/bills", key: "cg_live_0000000000000000000000000000000000000000000",
			want: map[int]string{401: `{"error":"Invalid API key"}`}},
		{name: "bad JSON", method: "POST", path: "/v1/graphql", key: k, ctype: js, body: `{"query":`,
			want: map[int]string{400: ""}},
		{name: "token in variables", method: "POST", path: "/v1/graphql", key: k, ctype: js,
			body: `{"query":"query Q($q:String){ bills(input:{q:$q}) { nextCursor } }","variables":{"q":"` + k + `"}}`,
			want: map[int]string{400: `{"errors":[{"message":"Request must not contain the bearer token"}]}`}},
		{name: "alias flood", method: "POST", path: "/v1/graphql", key: k, ctype: js, body: gqlBody(aliasFlood(40)),
			want: map[int]string{200: `{"data":null,"errors":[{"message":"Alias count 40 exceeds the maximum of 30","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ALIASES"}},{"message":"Root field count 40 exceeds the maximum of 10","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ROOT_FIELDS"}}]}`}},
		{name: "validation error", method: "POST", path: "/v1/graphql", key: k, ctype: js, body: `{"query":"{ bills { nope } }"}`,
			want: map[int]string{200: ""}},
		{name: "limit out of range", method: "POST", path: "/v1/graphql", key: k, ctype: js, body: `{"query":"{ bills(input:{limit:101}) { nextCursor } }"}`,
			want: map[int]string{200: ""}},
		{name: "GET graphql", method: "GET", path: "/v1/graphql", key: k,
			want: map[int]string{405: `{"errors":[{"message":"Method not allowed: use POST"}]}`}},
		{name: "text/plain", method: "POST", path: "/v1/graphql", key: k, ctype: "text/plain", body: billsQuery,
			want: map[int]string{415: `{"errors":[{"message":"Unsupported content type: use application/json"}]}`}},
		{name: "too large", method: "POST", path: "/v1/graphql", key: k, ctype: js, body: `{"query":"` + strings.Repeat(" ", 130<<10) + `{ bills { nextCursor } }"}`,
			want: map[int]string{413: `{"errors":[{"message":"Request body too large"}]}`}},
		{name: "free not entitled", method: "POST", path: "/v1/graphql", key: free, ctype: js, body: `{"query":"{ lobbyingDisclosures { nextCursor } }"}`,
			want: map[int]string{403: `{"error":"Tier not entitled to this endpoint family"}`}},
		{name: "bills bad limit", method: "GET", path: "/bills?limit=0", key: k,
			want: map[int]string{400: `{"errors":[{"message":"parameter \"limit\" must be between 1 and 100"}]}`}},
		{name: "unknown path", method: "GET", path: "/nope", key: k,
			want: map[int]string{404: `{"error":"Not Found"}`}},
	}
	// Interleave: one invalid request after every few valid ones.
	var mix []call
	for i, c := range calls {
		mix = append(mix, c)
		if i%2 == 1 {
			mix = append(mix, bad[(i/2)%len(bad)])
		}
	}
	return append(mix, bad...)
}

// sample is one measurement of both processes.
type sample struct {
	at                   time.Duration
	gwRSS, rdRSS         int64
	gwGoroutines         float64
	rdGoroutines, rdConn float64
	rdThreads, responses int64
}

// TestSoak runs mixed valid and invalid traffic for soakDuration, sampling
// both processes' memory and the gateway's goroutines, and asserts that every
// answer is the expected one (no unexpected 5xx) and that the samples are
// flat: the last third's mean is within tolerance of the first third's.
func TestSoak(t *testing.T) {
	t.Parallel()
	dur := soakDuration(t)
	e := start(t, 10, func(t *testing.T, s *stack.Stack) {
		s.Setenv("CIVICGATE_WEBHOOKS_DEV_LOOPBACK", "on")
		s.Setenv("CIVICGATE_WEBHOOKS_POLL", "200ms")
	})
	calls := soakCalls(e.keys, e.free)
	// Change events all along: a sync of 20 members every sixth of the run,
	// each changing every member, delivered to a subscribed receiver.
	hooks, from := subscribe(t, e, e.keys[1])
	const syncs, members = 6, 20
	files := make([]string, syncs)
	for i := range files {
		files[i] = legislators(t, members, i)
	}
	syncErr := make(chan error, 1)
	go func() {
		defer close(syncErr)
		for i, file := range files {
			if out, err := e.s.RunErr(bins.Recordsd, "sync", "members", "--file", file); err != nil {
				syncErr <- fmt.Errorf("sync %d: %w\n%s", i, err, out)
				return
			}
			if i == len(files)-1 {
				return
			}
			select {
			case <-time.After(dur / syncs):
			case <-t.Context().Done():
				return
			}
		}
	}()
	ctx := loadCtx(t)
	if dur > 2*time.Minute {
		var cancel func()
		ctx, cancel = contextWithTimeout(t, dur+time.Minute)
		defer cancel()
	}
	began := time.Now()
	l := hammer(ctx, e.s.Client, e.s.HTTPSURL, 4, 5*time.Millisecond, calls)
	warmup := dur / 10
	every := max(500*time.Millisecond, min(10*time.Second, dur/40))
	var samples []sample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for time.Since(began) < dur {
		<-tick.C
		if time.Since(began) < warmup {
			continue
		}
		rt := recordsdRuntime(t, e.s)
		s := sample{at: time.Since(began).Round(time.Second), gwGoroutines: goroutines(t, e.s), responses: int64(l.count()),
			rdGoroutines: rt["goroutines"], rdConn: rt["pool_total_conn"]}
		var err error
		if s.gwRSS, err = rss(e.gw.Pid()); err != nil {
			t.Fatal(err)
		}
		if s.rdRSS, err = rss(e.rd.Pid()); err != nil {
			t.Fatal(err)
		}
		if s.rdThreads, err = threads(e.rd.Pid()); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, s)
	}
	rs := l.stop()
	elapsed := time.Since(began)
	if err := <-syncErr; err != nil {
		t.Fatal(err)
	}
	events := memberEvents(t, e.s.DSN, from)
	if len(events) < syncs*members {
		t.Fatalf("%d member events from %d syncs of %d members", len(events), syncs, members)
	}
	dups := hooks.waitAll(t, e.s.DSN, events)
	t.Logf("webhooks: %d events, every one delivered, %d duplicates", len(events), dups)
	if dups > 0 {
		t.Errorf("%d duplicate deliveries without any fault", dups)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%8s %10s %12s %12s %10s %10s %10s %8s\n", "t", "responses", "gateway RSS", "recordsd RSS", "gw gorout", "rd gorout", "rd threads", "rd conns")
	for _, s := range samples {
		fmt.Fprintf(&b, "%8s %10d %10.1fMiB %10.1fMiB %10.0f %10.0f %10d %8.0f\n", s.at, s.responses, mib(s.gwRSS), mib(s.rdRSS), s.gwGoroutines, s.rdGoroutines, s.rdThreads, s.rdConn)
	}
	t.Logf("soak %s: %d responses (%.0f/s) %v\n%s", elapsed.Round(time.Second), len(rs), float64(len(rs))/elapsed.Seconds(), summary(rs), b.String())

	reportUnexpected(t, "soak", rs, nil)
	if summary(rs)[200] < len(rs)/3 {
		t.Errorf("only %d of %d answers were 200: the soak did not exercise the backend", summary(rs)[200], len(rs))
	}
	if len(samples) < 6 {
		t.Fatalf("only %d samples", len(samples))
	}
	flat(t, "gateway RSS (MiB)", samples, func(s sample) float64 { return mib(s.gwRSS) }, 1.25, 24)
	flat(t, "recordsd RSS (MiB)", samples, func(s sample) float64 { return mib(s.rdRSS) }, 1.25, 24)
	flat(t, "gateway goroutines", samples, func(s sample) float64 { return s.gwGoroutines }, 1.25, 25)
	flat(t, "recordsd goroutines", samples, func(s sample) float64 { return s.rdGoroutines }, 1.25, 25)
	flat(t, "recordsd threads", samples, func(s sample) float64 { return float64(s.rdThreads) }, 1.25, 4)
	e.s.CheckLogs(t, append(e.keys, e.free)...)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// flat fails when the mean of the last third of the samples exceeds the mean
// of the first third by more than factor×first + slack.
func flat(t *testing.T, what string, samples []sample, get func(sample) float64, factor, slack float64) {
	t.Helper()
	n := len(samples) / 3
	mean := func(ss []sample) float64 {
		var sum float64
		for _, s := range ss {
			sum += get(s)
		}
		return sum / float64(len(ss))
	}
	first, last := mean(samples[:n]), mean(samples[len(samples)-n:])
	if last > first*factor+slack {
		t.Errorf("%s grew: first third %.1f, last third %.1f (allowed ≤ %.1f)", what, first, last, first*factor+slack)
	} else {
		t.Logf("%s flat: first third %.1f, last third %.1f", what, first, last)
	}
}
