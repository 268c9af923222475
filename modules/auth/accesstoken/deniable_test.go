package accesstoken

import (
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/auth/denyable"
)

// TestUndeniableTokensRefused: a signed token whose subject or jti the deny
// list could not hold (past its 512 bytes, or holding a control character
// such as a tab) is refused as malformed, whichever claim names the subject;
// one at the bound is admitted (docs/design.md D64).
func TestUndeniableTokensRefused(t *testing.T) {
	key := testidp.Key{KID: "rsa-a", Signer: rsaA}
	p := testidp.Start(t, key)
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	cfg := testConfig(p, clock)
	cfg.SubjectClaim = "email"
	byEmail := newVerifier(t, cfg)
	token := func(set map[string]any) string {
		c := claimsFor(p, clock.Now())
		for k, val := range set {
			c[k] = val
		}
		return testidp.Sign(key, c)
	}
	long, tabbed := strings.Repeat("s", 600), "auth0|user\t1"
	for name, tok := range map[string]string{
		"600-byte sub":         token(map[string]any{"sub": long}),
		"sub with a tab":       token(map[string]any{"sub": tabbed}),
		"sub with an escape":   token(map[string]any{"sub": "auth0|\x1b[2Juser"}),
		"sub one past the end": token(map[string]any{"sub": strings.Repeat("s", denyable.MaxValueLen+1)}),
		"600-byte jti":         token(map[string]any{"jti": long}),
		"jti with a tab":       token(map[string]any{"jti": tabbed}),
	} {
		if _, err := v.Verify(t.Context(), tok); err == nil {
			t.Errorf("%s: admitted a token the deny list cannot deny", name)
		} else {
			wantKind(t, err, Malformed)
		}
	}
	wantKind(t, verifyErr(byEmail, token(map[string]any{"email": tabbed})), Malformed)
	if id := mustVerify(t, byEmail, token(map[string]any{"email": "a@example.org", "sub": tabbed})); id.Subject != "a@example.org" {
		t.Errorf("subject_claim email: identity %+v", id)
	}
	edge := strings.Repeat("s", denyable.MaxValueLen)
	if id := mustVerify(t, v, token(map[string]any{"sub": edge, "jti": edge})); id.Subject != edge || id.JTI != edge {
		t.Errorf("a 512-byte subject and jti: identity %+v", id)
	}
	if id := mustVerify(t, v, token(map[string]any{"sub": "ünïcode|subject"})); id.Subject != "ünïcode|subject" {
		t.Errorf("a non-ASCII subject: identity %+v", id)
	}
}
