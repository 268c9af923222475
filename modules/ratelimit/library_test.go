package ratelimit

import (
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/contract"
)

// TestLimitSharedThroughRedis: two gateways' apps on one Redis share a
// Limit's count (the console's sign-up limits): the quota is spent across
// both, then each refuses with the time until one more fits; another key
// and another name count apart.
func TestLimitSharedThroughRedis(t *testing.T) {
	client, prefix := testenv.Redis(t)
	rates, err := contract.ParseRates("3/h")
	if err != nil {
		t.Fatal(err)
	}
	var limits [2]*Limit
	for i := range limits {
		a := &App{limiter: newLimiter(limiterConfig{redis: client, prefix: prefix, timeout: time.Second, mode: modeClosed, maxKeys: 100})}
		if limits[i], err = a.Limit("signup-address", rates); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if ok, _, err := limits[i%2].Take(t.Context(), "ada@example.org"); !ok || err != nil {
			t.Fatalf("take %d: %v %v", i, ok, err)
		}
	}
	for _, l := range limits {
		ok, retry, err := l.Take(t.Context(), "ada@example.org")
		if ok || err != nil || retry <= 0 || retry > time.Hour {
			t.Fatalf("over the quota: allowed %v, retry %s, %v", ok, retry, err)
		}
	}
	if ok, _, err := limits[0].Take(t.Context(), "bob@example.org"); !ok || err != nil {
		t.Fatalf("another key: %v %v", ok, err)
	}
	other, err := (&App{limiter: limits[0].limiter}).Limit("signup-domain", rates)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := other.Take(t.Context(), "ada@example.org"); !ok || err != nil {
		t.Fatalf("another name: %v %v", ok, err)
	}
	if _, err := (&App{}).Limit("x", rates); err == nil {
		t.Error("an unprovisioned app gave a Limit")
	}
}
