package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestSlowCallNeverFreshQuota (docs/design.md D63): two gateways share a
// 5/m key on one Redis — another instance of the limiter spends 3, the
// Caddy gateway the last 2 — then a proxy between the Caddy gateway and
// Redis delays every call past the 50 ms store timeout. The gateway decides
// in memory (on_store_error local) from what Redis last told it: the spent
// key is refused with a Retry-After within the window, not given a fresh
// quota; a key Redis left 2 units gets 2; a key Redis never answered for
// gets its quota as before.
func TestSlowCallNeverFreshQuota(t *testing.T) {
	_, prefix := testenv.Redis(t)
	proxy := testenv.NewProxy(t, testenv.RedisAddr())
	g := startGateway(t, redisGlobal("redis://"+proxy.Addr(), prefix, "on_store_error local"), limitRoute("5/m"))
	other := testLimiter(t, testenv.RedisAddr(), prefix, 0.02)
	rate := contract.Rate{Quota: 5, Window: time.Minute}
	fallbacks := func() float64 { return g.scrape(t, "civicgate_ratelimit_store_fallbacks_total") }

	// Before the delay every decision of the gateway must be Redis': one it
	// made in memory (a call past 50 ms on a loaded machine) would not tell it
	// the shared count. Such an attempt is made again with keys of its own.
	var spent, two string
	attempt := 0
	testenv.Eventually(t, 30*time.Second, "the keys spent through Redis", func() error {
		spent, two = "spent"+strconv.Itoa(attempt), "two"+strconv.Itoa(attempt)
		attempt++
		f0 := fallbacks()
		for range 3 {
			if d, err := take1(context.Background(), other, spent, rate); err != nil || d.granted != 1 {
				t.Fatalf("the other gateway: %+v %v", d, err)
			}
		}
		for i := range 2 {
			if r := g.get(t, "/a", spent, "t"); r.status != 200 || r.limit != fmt.Sprintf(`"t";r=%d;t=60`, 1-i) {
				return fmt.Errorf("the gateway's share of the spent key: %+v", r)
			}
		}
		for range 3 {
			if r := g.get(t, "/a", two, "t"); r.status != 200 {
				return fmt.Errorf("the key left 2: %+v", r)
			}
		}
		if d := fallbacks() - f0; d != 0 {
			return fmt.Errorf("%v decisions made without Redis", d)
		}
		return nil
	})

	proxy.Delay(500 * time.Millisecond)
	f0 := fallbacks()
	r := g.get(t, "/a", spent, "t")
	if retry, err := strconv.Atoi(r.retryAfter); r.status != 429 || err != nil || retry < 1 || retry > 60 {
		t.Fatalf("spent key after a slow call: %+v; want 429 with a Retry-After within the window", r)
	}
	wantRefused(t, r, "t", `"t";q=5;w=60`, 1, 60)
	admitted := 0
	for range 4 {
		if r := g.get(t, "/a", two, "t"); r.status == 200 {
			admitted++
		} else if r.status != 429 || r.retryAfter == "" {
			t.Fatalf("key left 2: %+v", r)
		}
	}
	if admitted != 2 {
		t.Fatalf("a key Redis left 2 units got %d from the gateway's memory", admitted)
	}
	for i := range 5 {
		if r := g.get(t, "/a", "never"+strconv.Itoa(attempt), "t"); r.status != 200 {
			t.Fatalf("a key Redis never answered for, request %d: %+v", i+1, r)
		}
	}
	if d := fallbacks() - f0; d != 10 {
		t.Fatalf("%v decisions made without Redis, want all 10", d)
	}
}
