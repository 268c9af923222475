package ratelimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

func TestPolicyCache(t *testing.T) {
	c := policyCache{share: 0.02, maxLease: 1000}
	p, err := c.get("paid beta", "100/m", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.req.rates[0] != (contract.Rate{Quota: 100, Window: time.Minute}) || p.header != `"paid beta";q=100;w=60` ||
		p.req.prefix != "paid beta:100/m:" || p.cost != nil || p.req.lease != 2 || p.req.leaseTTL != 60e6 {
		t.Fatalf("entry %+v %+v", p, p.req)
	}
	if again, _ := c.get("paid beta", "100/m", ""); again != p {
		t.Fatal("second lookup built a new entry")
	}
	if other, _ := c.get("paid beta", "100/s", ""); other == p || other.req.prefix != "paid beta:100/s:" {
		t.Fatalf("another rate shares the entry: %+v", other)
	}
	for _, bad := range [][2]string{{"many/m", ""}, {"1/m", "lots/h"}, {"1/m 2/m", ""}} {
		if _, err := c.get("x", bad[0], bad[1]); err == nil {
			t.Fatalf("%q %q parsed", bad[0], bad[1])
		}
		if _, ok := c.m[policyKey{name: "x", rawRate: bad[0], rawCost: bad[1]}]; ok {
			t.Fatal("a bad rate was cached")
		}
	}
	for i := range maxPolicies + 5 {
		if _, err := c.get("p"+strconv.Itoa(i), "1/s", ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.m); n > maxPolicies {
		t.Fatalf("%d entries, bound %d", n, maxPolicies)
	}
}

// TestPolicyNamesAndHeader: a tier with several rates names each policy
// after its window and advertises all of them, then its cost budget.
func TestPolicyNamesAndHeader(t *testing.T) {
	c := policyCache{share: 0.02, maxLease: 1000}
	p, err := c.get("paid_beta", "100/m,20000/d", "50000/h")
	if err != nil {
		t.Fatal(err)
	}
	want := `"paid_beta-minute";q=100;w=60, "paid_beta-day";q=20000;w=86400, "paid_beta-cost";q=50000;w=3600`
	if p.header != want {
		t.Fatalf("header %s\nwant   %s", p.header, want)
	}
	keys := p.req.redisKeys("rl:", "key_1")
	if len(keys) != 2 || keys[0] != "rl:{key_1}:paid_beta-minute:100/60000" || keys[1] != "rl:{key_1}:paid_beta-day:20000/86400000" {
		t.Fatalf("keys %q", keys)
	}
	if ck := p.cost.redisKeys("rl:", "a}b{"); ck[0] != "rl:{%a%7Db%7B}:paid_beta-cost:50000/3600000" {
		t.Fatalf("cost key %q", ck)
	}
	if p.req.lease != 2 || p.cost.lease != 1000 {
		t.Fatalf("leases %d %d", p.req.lease, p.cost.lease)
	}
	// the closest to exhaustion is the smallest share left
	d := decision{n: 2, remaining: [maxRates]int64{50, 1000}}
	if i := p.req.closest(&d); i != 1 {
		t.Fatalf("closest %d", i)
	}
	d.remaining = [maxRates]int64{4, 1000}
	if i := p.req.closest(&d); i != 0 {
		t.Fatalf("closest %d", i)
	}
}
