package accesstoken

import (
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

// A new kid in the issuer's set: one refresh, then the token is accepted.
func TestRotationRefreshesOnce(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "old", Signer: rsaA})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	if n := p.JWKSFetches(); n != 1 {
		t.Fatalf("%d key set fetches at New, want 1", n)
	}
	mustVerify(t, v, testidp.Sign(p.Keys()[0], claimsFor(p, clock.Now())))

	newKey := testidp.Key{KID: "new", Signer: rsaB}
	p.SetKeys(testidp.Key{KID: "old", Signer: rsaA}, newKey)
	clock.Advance(DefaultJWKSRefreshMinInterval)
	mustVerify(t, v, testidp.Sign(newKey, claimsFor(p, clock.Now())))
	if n := p.JWKSFetches(); n != 2 {
		t.Fatalf("%d key set fetches, want 2 (one refresh for the new kid)", n)
	}
	// Known kids need no fetch, whatever arrives.
	for range 5 {
		c := claimsFor(p, clock.Now())
		c["jti"] = time.Now().String()
		mustVerify(t, v, testidp.Sign(newKey, c))
	}
	if n := p.JWKSFetches(); n != 2 {
		t.Fatalf("%d key set fetches, want still 2", n)
	}
}

// Unknown kids refresh the set at most once per JWKSRefreshMinInterval.
func TestUnknownKidRefreshRateLimited(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "a", Signer: rsaA})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))

	clock.Advance(DefaultJWKSRefreshMinInterval)
	wantKind(t, verifyErr(v, testidp.Sign(testidp.Key{KID: "nobody-1", Signer: rsaEvil}, claimsFor(p, clock.Now()))), UnknownKey)
	for i := range 20 {
		s := testidp.Key{KID: "nobody-" + string(rune('a'+i)), Signer: rsaEvil}
		wantKind(t, verifyErr(v, testidp.Sign(s, claimsFor(p, clock.Now()))), UnknownKey)
	}
	if n := p.JWKSFetches(); n != 2 {
		t.Fatalf("%d key set fetches, want 2: New and one refresh for 21 unknown kids", n)
	}
	if st := v.Stats(); st.KeySetRefreshesRateLimited != 20 || st.Refused[UnknownKey] != 21 {
		t.Fatalf("stats %+v", st)
	}
	clock.Advance(DefaultJWKSRefreshMinInterval)
	wantKind(t, verifyErr(v, testidp.Sign(testidp.Key{KID: "later", Signer: rsaEvil}, claimsFor(p, clock.Now()))), UnknownKey)
	if n := p.JWKSFetches(); n != 3 {
		t.Fatalf("%d key set fetches, want 3 after the interval", n)
	}
}

// The identity provider down: tokens of known keys still verify, a refresh
// failure is counted, a new kid is UnknownKey.
func TestOutageKeepsLastGoodSet(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "a", Signer: rsaA})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	p.Close()

	clock.Advance(11 * time.Minute) // past the set's lifetime (max-age=600)
	mustVerify(t, v, testidp.Sign(p.Keys()[0], claimsFor(p, clock.Now())))
	waitFor(t, "the background refresh to fail", func() bool { return v.Stats().KeySetRefreshFailures == 1 })
	st := v.Stats()
	if st.Keys != 1 || !st.KeySetRefreshDue.Equal(clock.Now().Add(DefaultJWKSRefreshMinInterval)) {
		t.Fatalf("stats %+v: want the last set kept and a retry after the interval", st)
	}
	mustVerify(t, v, testidp.Sign(p.Keys()[0], claimsFor(p, clock.Now())))

	clock.Advance(DefaultJWKSRefreshMinInterval)
	wantKind(t, verifyErr(v, testidp.Sign(testidp.Key{KID: "b", Signer: rsaB}, claimsFor(p, clock.Now()))), UnknownKey)
	waitFor(t, "the second refresh to fail", func() bool { return v.Stats().KeySetRefreshFailures == 2 })
	c := claimsFor(p, clock.Now())
	c["jti"] = "after the outage"
	mustVerify(t, v, testidp.Sign(p.Keys()[0], c))
}

// Cache-Control max-age decides when the set is refreshed, clamped to
// [JWKSCacheMin, JWKSCacheMax].
func TestCacheControlClamped(t *testing.T) {
	for _, tc := range []struct {
		cacheControl string
		want         time.Duration
	}{
		{"max-age=1", DefaultJWKSCacheMin},
		{"public, max-age=3600", time.Hour},
		{"max-age=99999999999999", DefaultJWKSCacheMax},
		{"no-store", DefaultJWKSCacheMin},
		{"", DefaultJWKSCacheMin},
	} {
		t.Run(tc.cacheControl, func(t *testing.T) {
			p := testidp.Start(t, testidp.Key{KID: "a", Signer: rsaA})
			p.SetCacheControl(tc.cacheControl)
			clock := newClock()
			v := newVerifier(t, testConfig(p, clock))
			st := v.Stats()
			if got := st.KeySetRefreshDue.Sub(st.KeySetFetched); got != tc.want {
				t.Fatalf("refresh due after %s, want %s", got, tc.want)
			}
			clock.Advance(tc.want - time.Second)
			mustVerify(t, v, testidp.Sign(p.Keys()[0], claimsFor(p, clock.Now())))
			if n := p.JWKSFetches(); n != 1 {
				t.Fatalf("%d fetches before the lifetime ended, want 1", n)
			}
			clock.Advance(time.Second)
			c := claimsFor(p, clock.Now())
			c["jti"] = "second"
			mustVerify(t, v, testidp.Sign(p.Keys()[0], c))
			waitFor(t, "the refresh at the lifetime's end", func() bool { return v.Stats().KeySetRefreshes == 2 })
			if n := p.JWKSFetches(); n != 2 {
				t.Fatalf("%d fetches, want 2", n)
			}
		})
	}
}

// A key the issuer withdraws stops verifying, cached tokens included.
func TestWithdrawnKeyStopsCachedTokens(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "a", Signer: rsaA}, testidp.Key{KID: "b", Signer: rsaB})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	tokA := testidp.Sign(p.Keys()[0], claimsFor(p, clock.Now()))
	tokB := testidp.Sign(p.Keys()[1], claimsFor(p, clock.Now()))
	mustVerify(t, v, tokA)
	mustVerify(t, v, tokB)

	p.SetKeys(testidp.Key{KID: "b", Signer: rsaB})
	clock.Advance(11 * time.Minute)
	mustVerify(t, v, tokB) // due: starts the refresh
	waitFor(t, "the refresh", func() bool { return v.Stats().KeySetRefreshes == 2 })
	mustVerify(t, v, tokB) // b unchanged: still the cached verification
	if st := v.Stats(); st.Verified != 2 {
		t.Fatalf("stats %+v: b's cached verification should have survived the refresh", st)
	}
	wantKind(t, verifyErr(v, tokA), UnknownKey)
}

// Concurrent tokens naming the same new kid: one fetch, every one accepted
// (those arriving as it ends find the kid in the new set).
func TestUnknownKidSingleFlight(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "old", Signer: rsaA})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	newKey := testidp.Key{KID: "new", Signer: rsaB}
	p.SetKeys(newKey)
	clock.Advance(DefaultJWKSRefreshMinInterval)

	const n = 16
	errs := make(chan error, n)
	for i := range n {
		c := claimsFor(p, clock.Now())
		c["jti"] = string(rune('a' + i))
		tok := testidp.Sign(newKey, c)
		go func() { errs <- verifyErr(v, tok) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	if f := p.JWKSFetches(); f != 2 {
		t.Fatalf("%d key set fetches, want 2 (New and one refresh)", f)
	}
}
