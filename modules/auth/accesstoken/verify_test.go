package accesstoken

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

func TestVerifiesEveryAlgorithm(t *testing.T) {
	signers := map[string]testidp.Key{
		"RS256": {KID: "rsa-a", Signer: rsaA},
		"PS256": {KID: "rsa-ps", Alg: "PS256", Signer: rsaB},
		"ES256": {KID: "ec-256", Signer: ecP256},
		"ES384": {KID: "ec-384", Alg: "ES384", Signer: ecP384},
		"EdDSA": {KID: "ed", Signer: edKey},
	}
	var all []testidp.Key
	for _, s := range signers {
		all = append(all, s)
	}
	p := testidp.Start(t, all...)
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	for alg, s := range signers {
		t.Run(alg, func(t *testing.T) {
			id := mustVerify(t, v, testidp.Sign(s, claimsFor(p, clock.Now())))
			if id.Subject != "auth0|user-1" || id.Tier != "paid_beta" || id.Issuer != p.Issuer() || id.JTI != "jti-1" {
				t.Fatalf("identity %+v", id)
			}
		})
	}
	if got := v.Stats().Verified; got != uint64(len(signers)) {
		t.Fatalf("Verified %d, want %d", got, len(signers))
	}
}

func TestIdentity(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: rsaA})
	s := p.Keys()[0]
	clock := newClock()
	now := clock.Now()
	cfg := testConfig(p, clock)
	cfg.RequireScopes = []FamilyScope{{"bills", "records:read"}, {"lobbying_disclosures", "lobbying:read"}}
	v := newVerifier(t, cfg)

	c := claimsFor(p, now)
	c["scp"] = []string{"records:read", "extra"}
	id := mustVerify(t, v, testidp.Sign(s, c))
	want := Identity{
		Subject: "auth0|user-1", Organization: p.Issuer() + "|auth0|user-1", Tier: "paid_beta",
		Scopes: []string{"openid", "records:read", "extra"}, Expiry: now.Add(time.Hour),
		JTI: "jti-1", Issuer: p.Issuer(), KeyID: "jwt:sub:auth0|user-1",
		DeniedFamilies: []string{"lobbying_disclosures"},
	}
	if !id.Expiry.Equal(want.Expiry) || !slices.Equal(id.Scopes, want.Scopes) || !slices.Equal(id.DeniedFamilies, want.DeniedFamilies) {
		t.Fatalf("identity %+v, want %+v", id, want)
	}
	id.Expiry, id.Scopes, id.DeniedFamilies = want.Expiry, want.Scopes, want.DeniedFamilies
	if !equalIdentity(id, want) {
		t.Fatalf("identity %+v, want %+v", id, want)
	}

	if err := v.RequireFamily(&id, "bills"); err != nil {
		t.Fatalf("bills: %v", err)
	}
	if err := v.RequireFamily(&id, "members"); err != nil {
		t.Fatalf("members (no scope required): %v", err)
	}
	err := v.RequireFamily(&id, "lobbying_disclosures")
	wantKind(t, err, InsufficientScope)
	var e *Error
	errors.As(err, &e)
	if e.Scope != "lobbying:read" || e.Kind.Status() != 403 ||
		e.Challenge() != `error="insufficient_scope", error_description="Access token lacks the scope this endpoint family requires", scope="lobbying:read"` {
		t.Fatalf("refusal %+v, challenge %s", e, e.Challenge())
	}
}

func equalIdentity(a, b Identity) bool {
	return a.Subject == b.Subject && a.Organization == b.Organization && a.Tier == b.Tier &&
		a.JTI == b.JTI && a.Issuer == b.Issuer && a.KeyID == b.KeyID && a.Expiry.Equal(b.Expiry) &&
		slices.Equal(a.Scopes, b.Scopes) && slices.Equal(a.DeniedFamilies, b.DeniedFamilies)
}

func TestKeyID(t *testing.T) {
	for sub, want := range map[string]string{
		"auth0|64f1c2":                         "jwt:sub:auth0|64f1c2",
		"abc123@clients":                       "jwt:sub:abc123@clients",
		"0b9d1c5e-7c4a-4c1e-9a59-0d9f3c2b1a00": "jwt:sub:0b9d1c5e-7c4a-4c1e-9a59-0d9f3c2b1a00",
	} {
		if got := keyID("https://idp.example/", sub); got != want {
			t.Errorf("keyID(%q) = %q, want %q", sub, got, want)
		}
	}
	for _, sub := range []string{"user name", "a:b", "key_x\n", strings.Repeat("a", 65), "ü", "a/b"} {
		got := keyID("https://idp.example/", sub)
		if !strings.HasPrefix(got, "jwt:hash:") || len(got) != len("jwt:hash:")+32 {
			t.Errorf("keyID(%q) = %q, want jwt:hash: and 32 hex digits", sub, got)
		}
		if got == keyID("https://other.example/", sub) {
			t.Errorf("keyID(%q) is the same for two issuers", sub)
		}
	}
}

func TestOrganizationAndSubjectClaims(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: rsaA})
	s := p.Keys()[0]
	clock := newClock()
	cfg := testConfig(p, clock)
	cfg.OrgClaim, cfg.SubjectClaim = "org_id", "oid"
	v := newVerifier(t, cfg)

	c := claimsFor(p, clock.Now())
	c["org_id"], c["oid"] = "org_42", "9f1c"
	id := mustVerify(t, v, testidp.Sign(s, c))
	if id.Organization != "org_42" || id.Subject != "9f1c" || id.KeyID != "jwt:sub:9f1c" {
		t.Fatalf("identity %+v", id)
	}
	for name, edit := range map[string]func(map[string]any){
		"no org claim":        func(c map[string]any) { delete(c, "org_id") },
		"empty org claim":     func(c map[string]any) { c["org_id"] = "" },
		"org claim not text":  func(c map[string]any) { c["org_id"] = 42 },
		"no subject claim":    func(c map[string]any) { delete(c, "oid") },
		"subject claim array": func(c map[string]any) { c["oid"] = []string{"x"} },
	} {
		t.Run(name, func(t *testing.T) {
			c := claimsFor(p, clock.Now())
			c["org_id"], c["oid"] = "org_42", "9f1c"
			edit(c)
			wantKind(t, verifyErr(v, testidp.Sign(s, c)), MissingClaim)
		})
	}
}

func TestTiers(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: rsaA})
	s := p.Keys()[0]
	clock := newClock()

	claimCfg := testConfig(p, clock)
	byClaim := newVerifier(t, claimCfg)
	claimCfg.DefaultTier = "free"
	byClaimDefault := newVerifier(t, claimCfg)

	scopeCfg := testConfig(p, clock)
	scopeCfg.TierClaim = ""
	scopeCfg.ScopeTiers = []ScopeTier{{"civic:enterprise", "enterprise"}, {"civic:paid", "paid_beta"}}
	byScope := newVerifier(t, scopeCfg)

	tok := func(edit func(map[string]any)) string {
		c := claimsFor(p, clock.Now())
		edit(c)
		return testidp.Sign(s, c)
	}
	cases := []struct {
		name string
		v    *Verifier
		edit func(map[string]any)
		tier string
		kind Kind
	}{
		{"claim", byClaim, func(c map[string]any) { c[testTierClaim] = "enterprise" }, "enterprise", 0},
		{"claim unknown", byClaim, func(c map[string]any) { c[testTierClaim] = "platinum" }, "", UnknownTier},
		{"claim not text", byClaim, func(c map[string]any) { c[testTierClaim] = []string{"free"} }, "", UnknownTier},
		{"claim empty", byClaim, func(c map[string]any) { c[testTierClaim] = "" }, "", UnknownTier},
		{"claim missing", byClaim, func(c map[string]any) { delete(c, testTierClaim) }, "", MissingTier},
		{"claim null", byClaim, func(c map[string]any) { c[testTierClaim] = nil }, "", MissingTier},
		{"claim missing, default", byClaimDefault, func(c map[string]any) { delete(c, testTierClaim) }, "free", 0},
		{"claim unknown, default", byClaimDefault, func(c map[string]any) { c[testTierClaim] = "platinum" }, "", UnknownTier},
		{"scope, first match wins", byScope, func(c map[string]any) { c["scope"] = "civic:paid civic:enterprise" }, "enterprise", 0},
		{"scp array", byScope, func(c map[string]any) { delete(c, "scope"); c["scp"] = []string{"civic:paid"} }, "paid_beta", 0},
		{"no matching scope", byScope, func(c map[string]any) { c["scope"] = "openid" }, "", MissingTier},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tc.v.Verify(context.Background(), tok(tc.edit))
			if tc.kind != 0 {
				wantKind(t, err, tc.kind)
				return
			}
			if err != nil || id.Tier != tc.tier {
				t.Fatalf("tier %q, %v; want %q", id.Tier, err, tc.tier)
			}
		})
	}
}

func TestCacheHitUntilExpiry(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: rsaA})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	c := claimsFor(p, clock.Now())
	c["exp"] = clock.Now().Add(2 * time.Minute).Unix()
	tok := testidp.Sign(p.Keys()[0], c)

	mustVerify(t, v, tok)
	mustVerify(t, v, tok)
	if st := v.Stats(); st.Verified != 1 || st.CacheHits != 1 || st.CacheEntries != 1 {
		t.Fatalf("stats %+v, want one verification and one hit", st)
	}
	if allocs := testing.AllocsPerRun(100, func() { mustVerify(t, v, tok) }); allocs != 0 {
		t.Fatalf("a cache hit allocates %v times", allocs)
	}
	clock.Advance(2*time.Minute + DefaultLeeway - time.Second)
	mustVerify(t, v, tok) // within the leeway, still the cached identity
	clock.Advance(time.Second)
	wantKind(t, verifyErr(v, tok), Expired)
	if st := v.Stats(); st.CacheEntries != 0 || st.Refused[Expired] != 1 {
		t.Fatalf("stats %+v, want the expired entry gone and one Expired", st)
	}
}

func TestCacheBounded(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: ecP256})
	clock := newClock()
	cfg := testConfig(p, clock)
	cfg.CacheSize = 3
	v := newVerifier(t, cfg)
	for i := range 5 {
		c := claimsFor(p, clock.Now())
		c["jti"] = string(rune('a' + i))
		mustVerify(t, v, testidp.Sign(p.Keys()[0], c))
	}
	if st := v.Stats(); st.CacheEntries != 3 || st.CacheEvictions != 2 {
		t.Fatalf("stats %+v, want 3 entries and 2 evictions", st)
	}
}

func TestVerificationSlotsBounded(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: rsaA})
	clock := newClock()
	cfg := testConfig(p, clock)
	cfg.MaxConcurrent = 1
	v := newVerifier(t, cfg)
	tok := testidp.Sign(p.Keys()[0], claimsFor(p, clock.Now()))

	v.sem <- struct{}{} // the one slot is taken
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(ctx, tok)
		done <- err
	}()
	waitFor(t, "the verification to wait for a slot", func() bool { return v.Stats().VerifyWaits == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want the context's", err)
	}
	<-v.sem
	mustVerify(t, v, tok) // the slot is free again
	if st := v.Stats(); st.Verified != 1 || st.Refused != [numKinds]uint64{} {
		t.Fatalf("stats %+v: a cancelled wait is no refusal", st)
	}
}

func TestNegativeLeewayMeansNone(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: rsaA})
	clock := newClock()
	cfg := testConfig(p, clock)
	cfg.Leeway = -1
	strict := newVerifier(t, cfg)
	lenient := newVerifier(t, testConfig(p, clock))
	c := claimsFor(p, clock.Now())
	c["exp"] = clock.Now().Add(-time.Second).Unix()
	tok := testidp.Sign(p.Keys()[0], c)
	wantKind(t, verifyErr(strict, tok), Expired)
	mustVerify(t, lenient, tok)
}

// The tier is resolved after the signature: a forged token never hears a
// 403 (which says the token itself was good), and a good token without a
// tier is refused from the cache the next time, without a verification.
func TestTierRefusalAfterSignature(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "k", Signer: rsaA})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	c := claimsFor(p, clock.Now())
	c[testTierClaim] = "platinum"

	wantKind(t, verifyErr(v, testidp.Sign(testidp.Key{KID: "k", Signer: rsaEvil}, c)), BadSignature)
	tok := testidp.Sign(p.Keys()[0], c)
	wantKind(t, verifyErr(v, tok), UnknownTier)
	for range cap(v.sem) {
		v.sem <- struct{}{} // no slot left: a verification would wait, and fail on the cancelled context
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := v.Verify(cancelled, tok)
	wantKind(t, err, UnknownTier)
	for range cap(v.sem) {
		<-v.sem
	}
	if st := v.Stats(); st.Refused[UnknownTier] != 2 || st.Refused[BadSignature] != 1 || st.Verified != 0 || st.CacheHits != 0 || st.CacheEntries != 1 {
		t.Fatalf("stats %+v", st)
	}
}
