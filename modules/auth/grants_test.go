package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
	// the limiter the grant's figures reach (tests may assemble modules)
	_ "github.com/civicgate/civicgate/modules/ratelimit"
)

// TestGrantedPolicy: a grant becomes the first rate's quota, the other rates
// grow in proportion, the cost budget takes the granted points, and nothing
// is ever lowered or given a budget it lacks.
func TestGrantedPolicy(t *testing.T) {
	ent, err := newTierPolicy("enterprise", TierConfig{Rate: "1000/m,100000/d", CostBudget: "500000/h"})
	if err != nil {
		t.Fatal(err)
	}
	free, err := newTierPolicy("free", TierConfig{Rate: "30/m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tier           *tierPolicy
		requests, cost int64
		rate, budget   string
	}{
		{ent, 2000, 900000, "2000/m,200000/d", "900000/h"},
		{ent, 1500, 0, "1500/m,150000/d", "500000/h"},
		{ent, 10, 10, "1000/m,100000/d", "500000/h"},                           // never lowered
		{ent, contract.MaxQuota * 4, 0, "60000000/m,1000000000/d", "500000/h"}, // bounded as ParseRate reads: one per µs, MaxQuota
		{free, 45, 900000, "45/m", ""},                                         // no budget to raise
	} {
		r, b := c.tier.granted(c.requests, c.cost)
		if r != c.rate || b != c.budget {
			t.Errorf("%s granted %d/%d: %v %v, want %s %s", c.tier.name, c.requests, c.cost, r, b, c.rate, c.budget)
		}
		if _, err := contract.ParseRates(r.(string)); err != nil {
			t.Errorf("granted rate %v does not parse: %v", r, err)
		}
	}
}

// grantRoute limits /limited with the placeholders civic_auth publishes.
const grantRoute = `route /limited {
		civic_auth
		civic_rate_limit {
			cost {civic.cost_budget}
		}
		respond "limited"
	}`

// TestGrantTwoGateways (Caddy, a second civicgate process, PostgreSQL,
// Redis, an injected clock in-process): a grant reaches both gateways
// through the key store's notification, both advertise and enforce the
// granted figures on one Redis count (the 429 comes at the granted quota
// whichever gateway the requests went to), and when the grant ends the
// tier's figures return by themselves — at the instant on the gateway whose
// clock the test moves, at the real end on the other.
func TestGrantTwoGateways(t *testing.T) {
	clock := useClock(t)
	dsn, pool := migratedDB(t)
	_, prefix := testenv.Redis(t)
	global := fmt.Sprintf("civic_rate_limit {\n\t\tredis redis://%s\n\t\tkey_prefix %s\n\t\ttimeout 50ms\n\t}", testenv.RedisAddr(), prefix)
	tiers := "tier free 30/m bills members\n\t\ttier enterprise 1000/m 100000/d cost 500000/h bills members changes"
	second := startBinaryGatewayWith(t, dsn, global, tiers, grantRoute)
	g := startGatewayWith(t, gatewayConfig{storeDSN: dsn, cacheTTL: "1h", globalOptions: global, routes: grantRoute})
	ctx := context.Background()
	free := issue(t, pool, "acme", "free", "live")
	ent := issue(t, pool, "bigco", "enterprise", "live")
	gateways := map[string]string{"in-process": g.base + "/limited", "second": second + "/limited"}
	policy := func(url, key string) (int, string, string) {
		res := get(t, url, "Authorization", "Bearer "+key)
		return res.status, res.header.Get("RateLimit-Policy"), res.header.Get("RateLimit")
	}
	const tierFree = `"free";q=30;w=60`
	const tierEnt = `"enterprise-minute";q=1000;w=60, "enterprise-day";q=100000;w=86400, "enterprise-cost";q=500000;w=3600`
	for name, url := range gateways {
		if _, p, _ := policy(url, free.Key); p != tierFree {
			t.Fatalf("%s before the grant: %q", name, p)
		}
		if _, p, _ := policy(url, ent.Key); p != tierEnt {
			t.Fatalf("%s before the grant: %q", name, p)
		}
	}
	// Both keys are cached (TTL 1h) on both gateways: only the notification
	// can bring the grants. The end is real, 20 s ahead, for the second
	// gateway; the in-process one is moved there by its clock.
	until := time.Now().Add(20 * time.Second).Truncate(time.Second)
	if _, err := keystore.SetGrant(ctx, pool, "acme", keystore.Grant{Requests: 40, Until: until}); err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.SetGrant(ctx, pool, "bigco", keystore.Grant{Requests: 2000, Cost: 900000, Until: until}); err != nil {
		t.Fatal(err)
	}
	const grantFree = `"free";q=40;w=60`
	const grantEnt = `"enterprise-minute";q=2000;w=60, "enterprise-day";q=200000;w=86400, "enterprise-cost";q=900000;w=3600`
	for name, url := range gateways {
		testenv.Eventually(t, 5*time.Second, name+" to show the grant", func() error {
			if _, p, _ := policy(url, ent.Key); p != grantEnt {
				return fmt.Errorf("policy %q", p)
			}
			return nil
		})
	}
	// acme's 40 requests a minute, spent on both gateways (2 requests
	// above were the tier's, on the tier's count): the 41st is refused.
	admitted := 0
	for i := 0; i < 40; i++ {
		url := gateways["in-process"]
		if i%2 == 1 {
			url = gateways["second"]
		}
		status, p, _ := policy(url, free.Key)
		if status == http.StatusOK {
			admitted++
		}
		if p != grantFree {
			t.Fatalf("request %d: policy %q, want %q", i, p, grantFree)
		}
	}
	status, p, rl := policy(gateways["second"], free.Key)
	if admitted != 40 || status != http.StatusTooManyRequests || p != grantFree || !strings.HasPrefix(rl, `"free";r=0;t=`) {
		t.Fatalf("%d admitted, then %d %q %q; want 40 then 429 at the granted quota", admitted, status, p, rl)
	}
	// The in-process gateway's clock passes the end: the tier's figures at
	// once, from the cached record, with no command and no notification.
	clock.set(until.Add(time.Second))
	if _, p, _ := policy(gateways["in-process"], ent.Key); p != tierEnt {
		t.Fatalf("in-process after the end: %q, want the tier's %q", p, tierEnt)
	}
	if _, p, _ := policy(gateways["in-process"], free.Key); p != tierFree {
		t.Fatalf("in-process after the end: %q, want the tier's %q", p, tierFree)
	}
	// The second gateway's real clock reaches the end too.
	testenv.Eventually(t, 40*time.Second, "the second gateway to return to the tier", func() error {
		if _, p, _ := policy(gateways["second"], ent.Key); p != tierEnt {
			return fmt.Errorf("policy %q", p)
		}
		return nil
	})
}
