package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/contract"
)

var cacheSecret = []byte("0123456789abcdef0123456789abcdef-identity")

func signedAt(t *testing.T, keyID string, at time.Time) string {
	t.Helper()
	tok, err := contract.SignIdentity(cacheSecret, contract.Caller{KeyID: keyID, Org: "org_1", Tier: "free", Env: "live",
		Families: []string{"bills"}}, at, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestVerifiedCacheKeepsAnAssertionUntilItExpires: an assertion verified once
// is answered from the cache without verifying again (no allocation beyond
// the hash's input), with its own claims, until its exp; from exp on it is
// refused, as VerifyIdentity refuses it.
func TestVerifiedCacheKeepsAnAssertionUntilItExpires(t *testing.T) {
	c := newVerifiedCache()
	t0 := time.Now().Truncate(time.Second)
	a, b := signedAt(t, "key_a", t0), signedAt(t, "key_b", t0)
	for _, tok := range []string{a, b} {
		if _, err := c.verify(cacheSecret, tok, t0); err != nil {
			t.Fatal(err)
		}
	}
	later := t0.Add(30 * time.Second)
	if claims, err := c.verify(cacheSecret, b, later); err != nil || claims.KeyID() != "key_b" {
		t.Fatalf("cached assertion of key_b: %+v %v", claims, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.verify(cacheSecret, a, later) }); n > 1 {
		t.Fatalf("a cached assertion costs %v allocations: it was verified again", n)
	}
	if _, err := c.verify(cacheSecret, a, t0.Add(time.Minute)); err == nil {
		t.Fatal("an assertion at its exp was accepted from the cache")
	}
	if c.lru.Len() != 1 {
		t.Fatalf("%d entries after one expired, want 1", c.lru.Len())
	}
}

// TestVerifiedCacheKeepsNoFailure: a forged assertion (another secret) and a
// tampered one are refused every time and never kept.
func TestVerifiedCacheKeepsNoFailure(t *testing.T) {
	c := newVerifiedCache()
	now := time.Now()
	good := signedAt(t, "key_a", now)
	forged, err := contract.SignIdentity([]byte("another-secret-another-secret-000000"), contract.Caller{KeyID: "key_a", Families: []string{"bills"}}, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]
	for range 2 {
		for _, tok := range []string{forged, tampered} {
			if _, err := c.verify(cacheSecret, tok, now); err == nil {
				t.Fatalf("accepted %q", tok)
			}
		}
	}
	if c.lru.Len() != 0 {
		t.Fatalf("%d refused assertions kept", c.lru.Len())
	}
}
