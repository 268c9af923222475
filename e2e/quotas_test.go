package e2e

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Quotas through the real gateway (docs/api.md "Rate limits", docs/design.md
// D11, D26): a burst spends the whole quota and the next request is refused
// with matching Retry-After and RateLimit; a tier with a two-second and a
// one-day quota advertises and enforces both. The real-clock test of the
// sliding window is in quotas_realclock_test.go, cost budgets in
// costbudget_test.go, usage in usage_test.go.

// gatewayFiles copies the shipped Caddyfiles (caddyfile/*) into a temporary
// directory, appends tiers (tier lines) to the copy of tiers.caddy and
// applies each edit (old → new, old must occur exactly once) to the copy of
// Caddyfile.local, and returns that copy's path: the gateway then runs the
// shipped routes and tiers plus what the test adds.
func gatewayFiles(t *testing.T, root string, tiers []string, edits ...[2]string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(root, "caddyfile", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped Caddyfiles: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Base(f) {
		case "tiers.caddy":
			for _, line := range tiers {
				b = append(b, line+"\n"...)
			}
		case "Caddyfile.local":
			for _, e := range edits {
				if n := bytes.Count(b, []byte(e[0])); n != 1 {
					t.Fatalf("Caddyfile.local holds %q %d times, want once", e[0], n)
				}
				b = bytes.Replace(b, []byte(e[0]), []byte(e[1]), 1)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "Caddyfile.local")
}

// storeClosed is the edit that makes a failed rate-limit store call a 500
// instead of a decision in this gateway's memory (on_store_error local, the
// shipped choice, would count a key afresh in memory: a bound across the
// shared store could not be judged then).
var storeClosed = [2]string{"on_store_error local", "on_store_error closed"}

// rateLimitRE is one RateLimit member: "<policy>";r=<remaining>;t=<s>.
var rateLimitRE = regexp.MustCompile(`^"([^"\\]+)";r=(\d+);t=(\d+)$`)

// rateLimit is a parsed RateLimit header.
type rateLimit struct {
	policy string
	r, t   int64
}

func parseRateLimit(v string) (rateLimit, bool) {
	m := rateLimitRE.FindStringSubmatch(v)
	if m == nil {
		return rateLimit{}, false
	}
	r, _ := strconv.ParseInt(m[2], 10, 64)
	tt, _ := strconv.ParseInt(m[3], 10, 64)
	return rateLimit{policy: m[1], r: r, t: tt}, true
}

// exchange is one request as the client saw it: sent just before the
// request was written, received once the response's headers arrived (the
// gateway decided it in between).
type exchange struct {
	sent, received time.Time
	status         int
	body           string
	header         http.Header
}

// send sends one request with key (and a JSON body when body is not "").
func send(t *testing.T, s *stack.Stack, method, path, key, body string) exchange {
	t.Helper()
	x, err := trySend(s, method, path, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// trySend is send returning the error, for other goroutines than the test's.
func trySend(s *stack.Stack, method, path, key, body string) (exchange, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.HTTPSURL+path, rd)
	if err != nil {
		return exchange{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	x := exchange{sent: time.Now()}
	resp, err := s.Client.Do(req)
	if err != nil {
		return exchange{}, err
	}
	x.received = time.Now()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return exchange{}, err
	}
	x.status, x.body, x.header = resp.StatusCode, string(b), resp.Header
	return x, nil
}

// refusal checks a rate-limit 429: the exact body, Retry-After N ≥ 1 and
// RateLimit naming policy with r=0;t=N (docs/api.md "Rate limits"). It
// returns N.
func refusal(t *testing.T, x exchange, policy string) int64 {
	t.Helper()
	if x.status != http.StatusTooManyRequests || x.body != `{"error":"Rate limit exceeded"}` {
		t.Fatalf("want 429 {\"error\":\"Rate limit exceeded\"}, got %d %s", x.status, x.body)
	}
	n, err := strconv.ParseInt(x.header.Get("Retry-After"), 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("Retry-After %q", x.header.Get("Retry-After"))
	}
	if want := `"` + policy + `";r=0;t=` + strconv.FormatInt(n, 10); x.header.Get("RateLimit") != want {
		t.Fatalf("RateLimit %q with Retry-After %d, want %q", x.header.Get("RateLimit"), n, want)
	}
	return n
}

// TestQuotaBurstThenRefused: a fresh paid_beta key (100/m) spends its whole
// quota at once on GET /bills — 100 requests from four concurrent clients,
// every one 200 — and the 101st is 429 with Retry-After N and RateLimit
// "paid_beta";r=0;t=N, N no later than the first request of the burst
// leaves the window; /v1/graphql shares the quota (its RateLimit-Policy adds
// the cost budget). A round in which a decision was made without Redis
// (on_store_error local decides in the gateway's memory) cannot judge the
// shared count and is repeated with a fresh key, three rounds at most. Such
// a round is told by the fallback counter, not by failed calls: a round's
// failures open the breaker, and the next round's first requests, decided
// in memory while it is open, fail no call (a 101st request was once
// admitted that way, docs/design.md D63).
func TestQuotaBurstThenRefused(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	const quota, workers = 100, 4
	for round := 1; round <= 3; round++ {
		key, _ := s.IssueKey("burstco"+strconv.Itoa(round), "paid_beta", "live")
		fallbacksBefore := storeFallbacks(t, s)
		var mu sync.Mutex
		var burst []exchange
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range quota / workers {
					x, err := trySend(s, http.MethodGet, "/bills?limit=1", key, "")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					burst = append(burst, x)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		next := send(t, s, http.MethodGet, "/bills?limit=1", key, "")
		if disturbed := storeFallbacks(t, s) - fallbacksBefore; disturbed > 0 {
			t.Logf("round %d: %d decisions made without Redis; repeating with a fresh key", round, disturbed)
			continue
		}
		first := burst[0].sent
		admitted := 0
		var other *exchange // the first answer that is not a 200
		for i, x := range burst {
			first = minTime(first, x.sent)
			if x.status == http.StatusOK {
				admitted++
				// t may reach two windows: a leased unit is counted as if
				// spent at its lease's end until the lease is settled (D26).
				if rl, ok := parseRateLimit(x.header.Get("RateLimit")); !ok || rl.policy != "paid_beta" || rl.r >= quota || rl.t < 1 || rl.t > 120 {
					t.Errorf("admitted with RateLimit %q", x.header.Get("RateLimit"))
				}
			} else if other == nil {
				other = &burst[i]
			}
			if p := x.header.Get("RateLimit-Policy"); p != `"paid_beta";q=100;w=60` {
				t.Errorf("RateLimit-Policy %q", p)
			}
		}
		if other != nil {
			t.Fatalf("a fresh 100/m key got %d of a burst of %d admitted; the first other answer: %d %s (Retry-After %q, RateLimit %q)",
				admitted, quota, other.status, other.body, other.header.Get("Retry-After"), other.header.Get("RateLimit"))
		}
		if t.Failed() {
			return
		}
		n := refusal(t, next, "paid_beta")
		// The oldest admitted unit was decided after the burst began and
		// leaves the window 60 s later: the 101st, decided before it was
		// received, waits at least 60 s minus what elapsed, at most 60 s.
		if lo := 60 - next.received.Sub(first).Seconds(); float64(n) < lo || n > 60 {
			t.Fatalf("Retry-After %d, want between %.1f and 60", n, lo)
		}
		g := send(t, s, http.MethodPost, "/v1/graphql", key, billsDoc)
		refusal(t, g, "paid_beta")
		if p := g.header.Get("RateLimit-Policy"); p != `"paid_beta";q=100;w=60, "paid_beta-cost";q=200000;w=3600` {
			t.Fatalf("/v1/graphql RateLimit-Policy %q", p)
		}
		return
	}
	t.Fatal("every round had a decision made without Redis: the shared quota was not measured")
}

// storeFallbacks is the gateway's civicgate_ratelimit_store_fallbacks_total:
// decisions on_store_error made, after a failed Redis call or while the
// limiter's breaker was open (which fails no call).
func storeFallbacks(t *testing.T, s *stack.Stack) int {
	t.Helper()
	return int(metricSum(t, []*stack.Stack{s}, "civicgate_ratelimit_store_fallbacks_total"))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// TestQuotaMinuteAndDayPolicies: a tier with two quotas, 3 per 2 s and 5 a
// day (tier twowin 3/2s 5/d), on GET /bills. RateLimit-Policy lists both
// ("twowin-2s";q=3;w=2, "twowin-day";q=5;w=86400, contract.WindowName);
// RateLimit names the one closest to exhaustion; three requests pass, the
// fourth is refused by the 2 s policy (Retry-After ≤ 2) while the day has
// room; once it frees, two more pass (the day's 5), and then the day policy
// refuses with a Retry-After of about a day.
//
// The fourth request can only be judged when the four were decided within
// 2 s (from the first's send to the fourth's response), and every decision
// only when Redis made it; on a machine too slow for either the attempt is
// repeated with a fresh key.
func TestQuotaMinuteAndDayPolicies(t *testing.T) {
	t.Parallel()
	s := stack.New(t, &bins)
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway(gatewayFiles(t, s.Root, []string{"tier twowin 3/2s 5/d bills members"}))
	const policies = `"twowin-2s";q=3;w=2, "twowin-day";q=5;w=86400`
	for attempt := 1; attempt <= 3; attempt++ {
		key, _ := s.IssueKey("twowinco"+strconv.Itoa(attempt), "twowin", "live")
		get := func() exchange {
			x := send(t, s, http.MethodGet, "/bills?limit=1", key, "")
			if p := x.header.Get("RateLimit-Policy"); p != policies {
				t.Fatalf("RateLimit-Policy %q, want %q", p, policies)
			}
			return x
		}
		admitted := 0
		// checkAdmitted: a 200 whose RateLimit names the policy closest to
		// exhaustion. The day's remaining is known exactly (nothing leaves
		// a day): 5 − admitted. Naming the 2 s policy means its share left
		// is at most the day's (ties name the first listed).
		checkAdmitted := func(x exchange) {
			t.Helper()
			if x.status != http.StatusOK {
				t.Fatalf("want 200, got %d %s (RateLimit %q)", x.status, x.body, x.header.Get("RateLimit"))
			}
			admitted++
			rl, ok := parseRateLimit(x.header.Get("RateLimit"))
			dayLeft := int64(5 - admitted)
			switch {
			case !ok:
				t.Fatalf("RateLimit %q", x.header.Get("RateLimit"))
			case rl.policy == "twowin-day" && (rl.r != dayLeft || rl.t < 86400-60 || rl.t > 86400):
				t.Fatalf("admitted #%d: RateLimit %q, want \"twowin-day\";r=%d;t≈86400", admitted, x.header.Get("RateLimit"), dayLeft)
			case rl.policy == "twowin-2s" && (rl.r*5 > dayLeft*3 || rl.t < 1 || rl.t > 2):
				t.Fatalf("admitted #%d: RateLimit %q names the 2 s policy, but the day has %d of 5 left", admitted, x.header.Get("RateLimit"), dayLeft)
			case rl.policy != "twowin-day" && rl.policy != "twowin-2s":
				t.Fatalf("RateLimit %q names no policy of the tier", x.header.Get("RateLimit"))
			}
		}
		fallbacksBefore := storeFallbacks(t, s)
		// disturbed: a decision of the attempt was made without Redis (a
		// loaded machine passes the 50 ms decision deadline, or an earlier
		// attempt's failures opened the breaker), so it was the
		// on_store_error local mode's, not the shared quota's: the attempt
		// measured nothing and is repeated with a fresh key.
		disturbed := func(phase string) bool {
			if n := storeFallbacks(t, s) - fallbacksBefore; n > 0 {
				t.Logf("attempt %d: %d decisions made without Redis %s; repeating with a fresh key", attempt, n, phase)
				return true
			}
			return false
		}
		var first [4]exchange
		for i := range first {
			first[i] = get()
		}
		if first[3].received.Sub(first[0].sent) >= 2*time.Second {
			t.Logf("attempt %d: four requests took %s, longer than the 2 s window; repeating", attempt, first[3].received.Sub(first[0].sent))
			continue
		}
		if disturbed("in the first four requests") {
			continue
		}
		for _, x := range first[:3] {
			checkAdmitted(x)
		}
		if n := refusal(t, first[3], "twowin-2s"); n > 2 {
			t.Fatalf("refused by the 2 s policy with Retry-After %d", n)
		}
		// Poll until each of two more requests is admitted; meanwhile
		// every refusal is the 2 s policy's (the day has room). Judged once
		// the polls are known to have been decided by Redis.
		var polled []exchange
		for range 2 {
			stack.WaitFor(t, 10*time.Second, "the 2 s policy to free a request", func() error {
				x := get()
				polled = append(polled, x)
				if x.status == http.StatusTooManyRequests {
					return errRefused
				}
				return nil
			})
		}
		last := get()
		if disturbed("while polling") {
			continue
		}
		for _, x := range polled {
			if x.status == http.StatusTooManyRequests {
				if n := refusal(t, x, "twowin-2s"); n > 2 {
					t.Fatalf("refused by the 2 s policy with Retry-After %d", n)
				}
				continue
			}
			checkAdmitted(x)
		}
		n := refusal(t, last, "twowin-day")
		// The day's oldest unit was decided after the test's first request
		// was sent: it leaves no earlier than a day after that.
		if lo := 86400 - last.received.Sub(first[0].sent).Seconds(); float64(n) < lo || n > 86400 {
			t.Fatalf("day policy Retry-After %d, want between %.0f and 86400", n, lo)
		}
		return
	}
	t.Fatal("no attempt sent four requests within the 2 s window with every decision made by Redis")
}

// errRefused: a poll got 429 and tries again.
var errRefused = errors.New("still refused")
