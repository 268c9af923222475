package accesstoken

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/civicgate/civicgate/internal/testenv"
)

// Test keys are generated once per test binary (RSA generation is slow).
var (
	keysOnce sync.Once
	rsaA     *rsa.PrivateKey
	rsaB     *rsa.PrivateKey
	rsaEvil  *rsa.PrivateKey
	ecP256   *ecdsa.PrivateKey
	ecP384   *ecdsa.PrivateKey
	edKey    ed25519.PrivateKey
)

func TestMain(m *testing.M) {
	testKeys()
	os.Exit(m.Run())
}

func testKeys() {
	keysOnce.Do(func() {
		must := func(err error) {
			if err != nil {
				panic(err)
			}
		}
		var err error
		rsaA, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		rsaB, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		rsaEvil, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		ecP256, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		ecP384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		must(err)
		_, edKey, err = ed25519.GenerateKey(rand.Reader)
		must(err)
	})
}

// signer is a private key published under a kid.
type signer struct {
	kid string
	alg string // the JWK's alg member ("" to leave it out)
	key crypto.Signer
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// publicJWK is the JWK of s's public key.
func (s signer) publicJWK() map[string]any {
	m := map[string]any{"kid": s.kid, "use": "sig"}
	if s.alg != "" {
		m["alg"] = s.alg
	}
	switch k := s.key.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64u(k.N.Bytes()), b64u(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PublicKey:
		b, _ := k.Bytes() // 0x04 || x || y
		size := (len(b) - 1) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", k.Curve.Params().Name, b64u(b[1:1+size]), b64u(b[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64u(k)
	}
	return m
}

// idp is an identity provider over real HTTP on 127.0.0.1: discovery at
// /.well-known/openid-configuration and the key set at /jwks.
type idp struct {
	srv          *httptest.Server
	issuer       string
	mu           sync.Mutex
	keys         []signer
	cacheControl string
	jwksFetches  atomic.Int64
	discoveries  atomic.Int64
}

func newIDP(t testing.TB, keys ...signer) *idp {
	t.Helper()
	testKeys()
	p := &idp{keys: keys, cacheControl: "max-age=600"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		p.discoveries.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.issuer, "jwks_uri": p.issuer + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.jwksFetches.Add(1)
		p.mu.Lock()
		defer p.mu.Unlock()
		var set []map[string]any
		for _, k := range p.keys {
			set = append(set, k.publicJWK())
		}
		if p.cacheControl != "" {
			w.Header().Set("Cache-Control", p.cacheControl)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	})
	p.srv = httptest.NewServer(mux)
	p.issuer = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) setKeys(keys ...signer) {
	p.mu.Lock()
	p.keys = keys
	p.mu.Unlock()
}

func (p *idp) setCacheControl(v string) {
	p.mu.Lock()
	p.cacheControl = v
	p.mu.Unlock()
}

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

func testConfig(p *idp, clock *fakeClock) Config {
	return Config{
		Issuer:     p.issuer,
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
func claimsFor(p *idp, now time.Time) map[string]any {
	return map[string]any{
		"iss": p.issuer, "aud": testAudience, "sub": "auth0|user-1",
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

// rawToken signs header and payload, given as JSON text exactly, with
// method and key: hostile tokens need JSON no encoder would write.
func rawToken(header, payload string, method jwt.SigningMethod, key any) string {
	input := b64u([]byte(header)) + "." + b64u([]byte(payload))
	if method == nil {
		return input + "."
	}
	sig, err := method.Sign(input, key)
	if err != nil {
		panic(err)
	}
	return input + "." + b64u(sig)
}

// token signs claims with s under its kid and alg.
func token(s signer, alg string, claims map[string]any) string {
	header := mustJSON(map[string]any{"alg": alg, "typ": "at+jwt", "kid": s.kid})
	return rawToken(header, mustJSON(claims), jwt.GetSigningMethod(alg), s.key)
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
