package e2e

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestThreeGatewaysOnRedisCluster runs three civicgate processes on one
// PostgreSQL, one recordsd and a real Redis Cluster of three masters with a
// replica each (docs/operations.md "Scaling out"; REDIS_URL in the cluster form
// internal/redisconn reads), then checks two things the gateways share.
//
// Revocation: a key each gateway has just admitted (so each holds it in its
// lookup cache) is revoked with `civicgate keys revoke`; within 2 s of the
// command's return every gateway answers 401 {"error":"API key revoked"}.
//
// Quota: one enterprise key (1000/min) is spent through all three at once,
// two clients on each. Quotas hold over sliding windows across gateways
// (docs/design.md D26: leases are counted at their end, so no 60 s admits
// more than the quota). Only each gateway's last lease — 20 units — may be
// held unspent, so D26 guarantees q − 3·20 (94 %); here every gateway keeps
// receiving requests after the quota is spent (a third of the requests are
// sent after it), so it spends what it holds, and the test asks the issue's
// 95 %: within one minute the three gateways together admit at most the
// quota and at least 95 % of it, and every other answer is a 429 with
// Retry-After.
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
func TestThreeGatewaysOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3, 1)
	gateways := startGateways(t, 3, cluster.URL())
	checkRevokedEverywhere(t, gateways)
	checkSharedQuota(t, gateways)
}

// checkRevokedEverywhere: a key revoked is refused by every gateway within 2 s.
func checkRevokedEverywhere(t *testing.T, gateways []*stack.Stack) {
	t.Helper()
	key, id := gateways[0].IssueKey("revokeco", "enterprise", "live")
	for i, s := range gateways {
		if resp, body := do(t, s, http.MethodGet, "/bills?limit=1", key, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("gateway %d before the revocation: %d %s", i, resp.StatusCode, body)
		}
	}
	cli := time.Now()
	gateways[0].Run(bins.Civicgate, "keys", "revoke", id)
	revoked := time.Now()
	const want = `{"error":"API key revoked"}`
	took := make([]time.Duration, len(gateways))
	var wg sync.WaitGroup
	for i, s := range gateways {
		wg.Go(func() {
			for {
				req, _ := http.NewRequest(http.MethodGet, s.HTTPSURL+"/bills?limit=1", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := s.Client.Do(req)
				if err != nil {
					t.Errorf("gateway %d: %v", i, err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusUnauthorized && string(body) == want {
					took[i] = time.Since(revoked)
					return
				}
				if resp.StatusCode != http.StatusOK {
					t.Errorf("gateway %d after the revocation: %d %s, want 200 until 401 %s", i, resp.StatusCode, body, want)
					return
				}
				if time.Since(revoked) > 30*time.Second {
					t.Errorf("gateway %d still admits the revoked key after 30 s", i)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("revocation (the command took %s) effective on the three gateways after %v", revoked.Sub(cli).Round(time.Millisecond), took)
	for i, d := range took {
		if d > 2*time.Second {
			t.Errorf("gateway %d refused the revoked key %s after `keys revoke` returned, want ≤ 2 s", i, d.Round(time.Millisecond))
		}
	}
}

// checkSharedQuota: see TestThreeGatewaysOnRedisCluster.
func checkSharedQuota(t *testing.T, gateways []*stack.Stack) {
	t.Helper()
	const quota, window, requests = 1000, time.Minute, 1500
	const sendFor = 50 * time.Second
	for round := 1; round <= 3; round++ {
		key, _ := gateways[0].IssueKey("scaleco"+strconv.Itoa(round), "enterprise", "live")
		fallbacksBefore := storeFallbacksOf(t, gateways)
		var admitted, refused, sent atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, s := range append(append([]*stack.Stack{}, gateways...), gateways...) {
			wg.Go(func() {
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
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		elapsed := time.Since(start)
		got := admitted.Load()
		// A decision made without Redis (a failed call, or the breaker open after one) may admit one request
		// Redis does not count: each widens the bounds by one, and three or more repeat the round.
		disturbed := int64(storeFallbacksOf(t, gateways) - fallbacksBefore)
		t.Logf("round %d: admitted %d, refused %d in %s through three gateways on a Redis Cluster (quota %d), decisions without Redis %d",
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
			t.Fatalf("admitted %d within one minute, want %d to %d (at most the quota, at least 95 %%; decisions without Redis %d)",
				got, lo, hi, disturbed)
		}
		return
	}
	t.Fatal("no round measured sharing: each had three or more decisions made without Redis, or did not fit in one minute")
}

// storeFallbacksOf sums civicgate_ratelimit_store_fallbacks_total (decisions
// on_store_error made) over the gateways' admin metrics.
func storeFallbacksOf(t *testing.T, gateways []*stack.Stack) int {
	t.Helper()
	return int(metricSum(t, gateways, "civicgate_ratelimit_store_fallbacks_total"))
}

// storeErrors sums civicgate_ratelimit_store_errors_total over the gateways'
// admin metrics.
func storeErrors(t *testing.T, gateways []*stack.Stack) int {
	t.Helper()
	return int(metricSum(t, gateways, "civicgate_ratelimit_store_errors_total"))
}
