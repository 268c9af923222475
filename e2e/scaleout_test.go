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
// enterprise key (1000/min) through both at once, two clients on each. Quotas
// hold over sliding windows across gateways (docs/design.md D26: leases are
// counted at their end, so no 60 s admits more than the quota, and only each
// gateway's last lease — 20 units — may be held unspent: at least 96 %):
// within one minute the two gateways together admit at most the quota and
// at least 95 % of it, and every other answer is a 429 with Retry-After.
//
// One minute: the clients send 1500 requests (half as many again as the
// quota) and stop at 50 s if they have not; a round counts only when all
// 1500 were sent and answered within 60 s of its first send — every
// decision then lies in one window — else the machine was too slow to
// measure it and the round is repeated with a fresh key.
//
// A Redis call over its 50 ms deadline makes that decision local to one
// gateway (on_store_error local, by design): it may admit that one request
// beyond the shared count, and Redis may have granted the call a lease (20
// units) that no gateway spends, so each such call widens the bounds by 1
// above and 20 below; from three failures on a breaker may have opened and
// the gateways counted alone for a second, so that round does not measure
// sharing and is repeated with a fresh key, at most three rounds in all.
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
	const sendFor = 50 * time.Second
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
				for time.Since(start) < sendFor && sent.Add(1) <= requests {
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
		got := admitted.Load()
		disturbed := int64(storeErrors(t, gateways) - errorsBefore)
		t.Logf("round %d: admitted %d, refused %d in %s through two gateways (quota %d), Redis store errors %d",
			round, got, refused.Load(), elapsed.Round(time.Millisecond), quota, disturbed)
		if got+refused.Load() < requests || elapsed >= window {
			t.Logf("round %d: %d of %d requests answered in %s, not all within one window; repeating",
				round, got+refused.Load(), requests, elapsed.Round(time.Millisecond))
			continue
		}
		if disturbed >= 3 {
			continue
		}
		lo, hi := int64(quota*95/100)-20*disturbed, quota+disturbed
		if got < lo || got > hi {
			t.Fatalf("admitted %d within one minute, want %d to %d (at most the quota, at least 95 %%; store errors %d)",
				got, lo, hi, disturbed)
		}
		return
	}
	t.Fatal("no round measured sharing: each had three or more Redis calls over their deadline, or did not fit in one minute")
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
