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
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
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

// grantRoutes limit /limited with the placeholders civic_auth publishes,
// and /perorg per organization.
const grantRoutes = `route /limited {
		civic_auth
		civic_rate_limit {
			cost {civic.cost_budget}
		}
		respond "limited"
	}
	route /perorg {
		civic_auth
		civic_rate_limit {
			count per_organization
		}
		respond "perorg"
	}`

// TestGrantTwoGateways (Caddy, a second civicgate process, PostgreSQL,
// Redis, an injected clock in-process): a grant reaches both gateways
// through the key store's notification, both advertise and enforce the
// granted figures on one Redis count (the 429 comes at the granted quota
// whichever gateway the requests went to), the 80 % and 100 % crossings are
// recorded once for the window with the granted limit, and when the grant
// ends the tier's figures return by themselves — at the instant on the
// gateway whose clock the test moves, at the real end on the other. Under
// count per_organization two keys of one organization share one quota.
func TestGrantTwoGateways(t *testing.T) {
	clock := useClock(t)
	dsn, pool := migratedDB(t)
	_, prefix := testenv.Redis(t)
	if err := usage.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", dsn) // the second gateway is given it too
	global := fmt.Sprintf(`civic_rate_limit {
		redis redis://%s
		key_prefix %s
		timeout 50ms
		usage {
			postgres {env.DATABASE_URL}
			flush_interval 1s
		}
	}`, testenv.RedisAddr(), prefix)
	tiers := "tier free 30/m bills members\n\t\ttier enterprise 1000/m 100000/d cost 500000/h bills members changes"
	second := startBinaryGatewayWith(t, dsn, global, tiers, grantRoutes)
	g := startGatewayWith(t, gatewayConfig{storeDSN: dsn, cacheTTL: "1h", globalOptions: global, routes: grantRoutes})
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
	// Both gateways saw acme past 80 % and refused it: one row per level.
	testenv.Eventually(t, 10*time.Second, "the crossings to be flushed", func() error {
		var levels []int
		var limits []int64
		rows, err := pool.Query(ctx, `SELECT level, "limit" FROM civicgate.quota_crossings
			WHERE org_id = $1 AND key_id = $2 AND policy = 'free' AND kind = 'requests' ORDER BY level`, free.OrgID, free.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l int
			var q int64
			if err := rows.Scan(&l, &q); err != nil {
				return err
			}
			levels, limits = append(levels, l), append(limits, q)
		}
		if fmt.Sprint(levels, limits) != "[80 100] [40 40]" {
			return fmt.Errorf("crossings: levels %v limits %v", levels, limits)
		}
		return nil
	})
	// The in-process gateway's clock passes the end: the tier's figures at
	// once, from the cached record, with no command and no notification.
	clock.set(until.Add(time.Second))
	if _, p, _ := policy(gateways["in-process"], ent.Key); p != tierEnt {
		t.Fatalf("in-process after the end: %q, want the tier's %q", p, tierEnt)
	}
	if _, p, _ := policy(gateways["in-process"], free.Key); p != tierFree {
		t.Fatalf("in-process after the end: %q, want the tier's %q", p, tierFree)
	}
	// Two keys of one organization, counted per organization, on both
	// gateways: 30 a minute in all, the 31st refused whatever the key.
	duo1 := issue(t, pool, "duo", "free", "live")
	duo2 := issue(t, pool, "duo", "free", "live")
	admitted = 0
	for i := 0; i < 30; i++ {
		key, url := duo1.Key, g.base+"/perorg"
		if i%2 == 1 {
			key = duo2.Key
		}
		if i%3 == 0 {
			url = second + "/perorg"
		}
		if res := get(t, url, "Authorization", "Bearer "+key); res.status == http.StatusOK {
			admitted++
		}
	}
	for _, key := range []string{duo1.Key, duo2.Key} {
		if res := get(t, second+"/perorg", "Authorization", "Bearer "+key); admitted != 30 || res.status != http.StatusTooManyRequests {
			t.Fatalf("per organization: %d admitted, then %d; want 30 and 429 for either key", admitted, res.status)
		}
	}
	// The second gateway's real clock reaches the end too.
	testenv.Eventually(t, 40*time.Second, "the second gateway to return to the tier", func() error {
		if _, p, _ := policy(gateways["second"], ent.Key); p != tierEnt {
			return fmt.Errorf("policy %q", p)
		}
		return nil
	})
}
