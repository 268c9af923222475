package accesstoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

// Test keys are generated once per test binary (RSA generation is slow);
// tests publish them under kids of their own (testidp.Key).
var (
	rsaA    *rsa.PrivateKey
	rsaB    *rsa.PrivateKey
	rsaEvil *rsa.PrivateKey
	ecP256  *ecdsa.PrivateKey
	ecP384  *ecdsa.PrivateKey
	edKey   ed25519.PrivateKey
)

func TestMain(m *testing.M) {
	rsaA = testidp.MustSigner("RS256").(*rsa.PrivateKey)
	rsaB = testidp.MustSigner("RS256").(*rsa.PrivateKey)
	rsaEvil = testidp.MustSigner("RS256").(*rsa.PrivateKey)
	ecP256 = testidp.MustSigner("ES256").(*ecdsa.PrivateKey)
	ecP384 = testidp.MustSigner("ES384").(*ecdsa.PrivateKey)
	edKey = testidp.MustSigner("EdDSA").(ed25519.PrivateKey)
	os.Exit(m.Run())
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// fakeClock is the Now of a test that moves time itself.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_900_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const (
	testAudience  = "https://api.civicgate.example"
	testTierClaim = "https://civicgate.example/tier"
)

func testConfig(p *testidp.Server, clock *fakeClock) Config {
	return Config{
		Issuer:     p.Issuer(),
		Audience:   testAudience,
		Algorithms: []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"},
		TierClaim:  testTierClaim,
		Tiers:      []string{"free", "paid_beta", "enterprise"},
		Now:        clock.Now,
	}
}

func newVerifier(t testing.TB, cfg Config) *Verifier {
	t.Helper()
	v, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(v.Close)
	return v
}

// claimsFor are the claims of a good token of p at now.
func claimsFor(p *testidp.Server, now time.Time) map[string]any {
	return map[string]any{
		"iss": p.Issuer(), "aud": testAudience, "sub": "auth0|user-1",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "jti-1",
		"scope": "openid records:read", testTierClaim: "paid_beta",
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wantKind fails t unless err is an *Error of kind k.
func wantKind(t testing.TB, err error, k Kind) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a refusal %s", err, err, k)
	}
	if e.Kind != k {
		t.Fatalf("refused as %s, want %s", e.Kind, k)
	}
}

func mustVerify(t testing.TB, v *Verifier, tok string) Identity {
	t.Helper()
	id, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return id
}

func verifyErr(v *Verifier, tok string) error {
	_, err := v.Verify(context.Background(), tok)
	return err
}

// waitFor awaits a condition another goroutine brings about (a background
// refresh).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.EventuallyTrue(t, 20*time.Second, what, cond)
}
