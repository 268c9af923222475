package ratelimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

func TestPolicyCache(t *testing.T) {
	var c policyCache
	p, err := c.get("paid beta", "100/m")
	if err != nil {
		t.Fatal(err)
	}
	if p.r != (contract.Rate{Quota: 100, Window: time.Minute}) || p.header != `"paid beta";q=100;w=60` || p.prefix != "paid beta:100/60000:" {
		t.Fatalf("entry %+v", p)
	}
	if again, _ := c.get("paid beta", "100/m"); again != p {
		t.Fatal("second lookup built a new entry")
	}
	if other, _ := c.get("paid beta", "100/s"); other == p || other.prefix != "paid beta:100/1000:" {
		t.Fatalf("another rate shares the entry: %+v", other)
	}
	if _, err := c.get("x", "many/m"); err == nil {
		t.Fatal("a bad rate parsed")
	}
	if _, ok := c.m[policyKey{name: "x", rawRate: "many/m"}]; ok {
		t.Fatal("a bad rate was cached")
	}
	for i := range maxPolicies + 5 {
		if _, err := c.get("p"+strconv.Itoa(i), "1/s"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.m); n > maxPolicies {
		t.Fatalf("%d entries, bound %d", n, maxPolicies)
	}
}
