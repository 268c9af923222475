package e2e

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/stack"
)

// TestTwoGatewaysShareOneQuota runs two civicgate processes on one PostgreSQL,
// one Redis key prefix and one recordsd (README "Scaling out"), and spends one
// enterprise key (1000/min) through both at once: together they admit the
// quota (plus what the window earns back meanwhile) within 5 %, and every
// other answer is a 429 with Retry-After.
//
// A Redis call over its 50 ms deadline makes that decision local to one
// gateway (on_store_error local, by design): each such call may misplace at
// most one lease (20 tokens), which widens the bound by as much; from three
// failures on a breaker may have opened and the gateways counted alone for a
// second, so that round does not measure sharing and is repeated with a
// fresh key, at most three rounds in all.
func TestTwoGatewaysShareOneQuota(t *testing.T) {
	a := stack.New(t, &bins)
	a.Prepare()
	a.StartRecordsd()
	a.StartGateway("caddyfile/Caddyfile.local")
	b := stack.New(t, &bins)
	for _, name := range []string{"DATABASE_URL", "REDIS_URL", "CIVICGATE_RL_PREFIX", "CIVIC_IDENTITY_SECRET",
		"CIVIC_WEBHOOK_SECRET_KEY", "CIVICGATE_UPSTREAM", "RECORDSD_LISTEN", "RECORDSD_CURSOR_SECRET"} {
		b.Setenv(name, a.Getenv(name))
	}
	b.StartGateway("caddyfile/Caddyfile.local")
	gateways := []*stack.Stack{a, b}

	const quota, window, requests = 1000, time.Minute, 1500
	for round := 1; round <= 3; round++ {
		key, _ := a.IssueKey("scaleco"+strconv.Itoa(round), "enterprise", "live")
		errorsBefore := storeErrors(t, gateways)
		var admitted, refused, sent atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, s := range []*stack.Stack{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for sent.Add(1) <= requests {
					req, _ := http.NewRequest(http.MethodGet, s.HTTPSURL+"/bills?limit=1", nil)
					req.Header.Set("Authorization", "Bearer "+key)
					resp, err := s.Client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					switch {
					case resp.StatusCode == http.StatusOK:
						admitted.Add(1)
					case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
						refused.Add(1)
					default:
						t.Errorf("status %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
						return
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		elapsed := time.Since(start)
		expected := quota + float64(quota)*elapsed.Seconds()/window.Seconds()
		got := float64(admitted.Load())
		disturbed := storeErrors(t, gateways) - errorsBefore
		t.Logf("round %d: admitted %v, refused %d in %s through two gateways (expected %.0f), Redis store errors %d",
			round, got, refused.Load(), elapsed.Round(time.Millisecond), expected, disturbed)
		if disturbed >= 3 {
			continue
		}
		tolerance := 0.05*quota + float64(20*disturbed)
		if got > expected+tolerance || got < expected-tolerance {
			t.Fatalf("admitted %v, want %.0f ± %.0f (5 %% of %d + 20 per store error)", got, expected, tolerance, quota)
		}
		return
	}
	t.Fatal("every round had three or more Redis calls over their deadline: sharing was not measured")
}

// storeErrors sums civicgate_ratelimit_store_errors_total over the gateways'
// admin metrics.
func storeErrors(t *testing.T, gateways []*stack.Stack) int {
	t.Helper()
	total := 0
	for _, s := range gateways {
		resp, err := http.Get("http://" + s.Getenv("CIVICGATE_ADMIN") + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "civicgate_ratelimit_store_errors_total "); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				total += int(n)
			}
		}
		resp.Body.Close()
	}
	return total
}
