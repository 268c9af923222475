package testidp_test

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/golang-jwt/jwt/v5"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

// verifier is go-oidc's, an implementation of discovery, JWKS and signature
// checks written apart from the gateway's, over s's discovery.
func verifier(t *testing.T, s *testidp.Server) *oidc.IDTokenVerifier {
	t.Helper()
	p, err := oidc.NewProvider(t.Context(), s.Issuer())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	return p.VerifierContext(t.Context(), &oidc.Config{
		SkipClientIDCheck:    true,
		SupportedSigningAlgs: []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"},
	})
}

func claims(s *testidp.Server, sub string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": s.Issuer(), "sub": sub, "aud": "api", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Every kind of key signs a token that an independent verifier accepts
// against the published key set, and a key the set lacks is refused.
func TestSignVerifiesAgainstTheKeySet(t *testing.T) {
	var keys []testidp.Key
	for _, alg := range []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"} {
		keys = append(keys, testidp.NewKey(t, alg))
	}
	s := testidp.Start(t, keys...)
	v := verifier(t, s)
	for _, k := range keys {
		if !strings.HasPrefix(k.KID, strings.ToLower(k.Alg)+"-") || k.Use != "sig" {
			t.Errorf("NewKey(%s): kid %q, use %q", k.Alg, k.KID, k.Use)
		}
		tok, err := v.Verify(t.Context(), testidp.Sign(k, claims(s, "user-"+k.Alg)))
		if err != nil {
			t.Errorf("%s: %v", k.Alg, err)
			continue
		}
		if tok.Subject != "user-"+k.Alg {
			t.Errorf("%s: subject %q", k.Alg, tok.Subject)
		}
	}
	stranger := keys[0]
	stranger.Signer = testidp.MustSigner("RS256")
	if _, err := v.Verify(t.Context(), testidp.Sign(stranger, claims(s, "x"))); err == nil {
		t.Error("a token of a key the set does not hold was accepted")
	}
}

func decode(t *testing.T, seg string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Sign writes kid, the alg (Alg, else the key type's) and typ at+jwt; the
// JWK carries alg only when Key has one, and use sig unless told.
func TestSignHeaderAndJWKMembers(t *testing.T) {
	ec := testidp.MustSigner("ES384")
	k := testidp.Key{KID: "bare", Signer: ec}
	h := decode(t, strings.Split(testidp.Sign(k, map[string]any{"sub": "x"}), ".")[0])
	if h["alg"] != "ES384" || h["kid"] != "bare" || h["typ"] != "at+jwt" || len(h) != 3 {
		t.Errorf("header %v", h)
	}
	jwk := k.JWK()
	if _, ok := jwk["alg"]; ok || jwk["use"] != "sig" || jwk["kty"] != "EC" || jwk["crv"] != "P-384" {
		t.Errorf("JWK %v", jwk)
	}
	enc := testidp.Key{KID: "e", Alg: "PS256", Use: "enc", Signer: testidp.MustSigner("PS256")}
	if jwk := enc.JWK(); jwk["use"] != "enc" || jwk["alg"] != "PS256" || jwk["kty"] != "RSA" || jwk["e"] != "AQAB" {
		t.Errorf("JWK %v", jwk)
	}
	if h := decode(t, strings.Split(testidp.Sign(enc, nil), ".")[0]); h["alg"] != "PS256" {
		t.Errorf("header %v", h)
	}
}

// SignRaw keeps the JSON texts byte for byte and signs what it was told;
// SignHeader's none leaves the signature empty, and HS256 takes a secret.
func TestSignRawAndHeader(t *testing.T) {
	k := testidp.NewKey(t, "RS256")
	header, payload := `{"alg":"RS256","kid":"a","alg":"none"}`, `{"sub":"x","sub":"y"}`
	tok := testidp.SignRaw(header, payload, jwt.SigningMethodRS256, k)
	seg := strings.Split(tok, ".")
	if got, _ := base64.RawURLEncoding.DecodeString(seg[0]); string(got) != header {
		t.Errorf("header %q", got)
	}
	if got, _ := base64.RawURLEncoding.DecodeString(seg[1]); string(got) != payload {
		t.Errorf("payload %q", got)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(seg[2])
	if err := jwt.SigningMethodRS256.Verify(seg[0]+"."+seg[1], sig, k.Signer.Public().(*rsa.PublicKey)); err != nil {
		t.Errorf("signature: %v", err)
	}
	if tok := testidp.SignRaw(header, payload, nil, nil); !strings.HasSuffix(tok, ".") || strings.Count(tok, ".") != 2 {
		t.Errorf("unsigned %q", tok)
	}

	for _, alg := range []string{"none", "nOnE"} {
		if tok := testidp.SignHeader(map[string]any{"alg": alg}, nil, map[string]any{"sub": "x"}); !strings.HasSuffix(tok, ".") {
			t.Errorf("alg %s: %q", alg, tok)
		}
	}
	secret := []byte("the public key as text")
	tok = testidp.SignHeader(map[string]any{"alg": "HS256", "kid": "a"}, secret, map[string]any{"sub": "x"})
	parsed, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return secret, nil }, jwt.WithValidMethods([]string{"HS256"}))
	if err != nil || parsed.Header["kid"] != "a" {
		t.Errorf("HS256: %v %v", err, parsed)
	}
}

func get(t *testing.T, url string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return http.DefaultClient.Do(req)
}

func kids(t *testing.T, s *testidp.Server) ([]string, string) {
	t.Helper()
	resp, err := get(t, s.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct{ Keys []struct{ Kid string } }
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.Kid)
	}
	return out, resp.Header.Get("Cache-Control")
}

// SetKeys and SetCacheControl change the next fetch; the counters count
// requests; Close makes fetches fail.
func TestServerRotationCountersOutage(t *testing.T) {
	a, b := testidp.NewKey(t, "EdDSA"), testidp.NewKey(t, "ES256")
	s := testidp.Start(t, a)
	if got, cc := kids(t, s); len(got) != 1 || got[0] != a.KID || cc != "max-age=600" {
		t.Fatalf("key set %v, Cache-Control %q", got, cc)
	}
	s.SetKeys(a, b)
	s.SetCacheControl("no-store")
	if got, cc := kids(t, s); len(got) != 2 || got[1] != b.KID || cc != "no-store" {
		t.Fatalf("after SetKeys: %v, Cache-Control %q", got, cc)
	}
	if got := s.Keys(); len(got) != 2 || got[1].KID != b.KID {
		t.Fatalf("Keys %v", got)
	}
	s.SetKeys()
	s.SetCacheControl("")
	if got, cc := kids(t, s); len(got) != 0 || cc != "" {
		t.Fatalf("no keys: %v, Cache-Control %q", got, cc)
	}
	verifier(t, s)
	if n, d := s.JWKSFetches(), s.Discoveries(); n != 3 || d != 1 {
		t.Fatalf("%d key set fetches, %d discoveries; want 3 and 1", n, d)
	}
	s.Close()
	if resp, err := get(t, s.JWKSURL()); err == nil {
		resp.Body.Close()
		t.Fatalf("after Close: %d", resp.StatusCode)
	}
	s.Close()
}
