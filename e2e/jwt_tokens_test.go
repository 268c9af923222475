package e2e

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Tokens made and read by the access-token tests: decoded without
// verification (those the test signs itself: internal/testkit/testidp), the issuer's
// keys read from its JWKS.

// jwtParts are a JWT's decoded header and claims, unverified.
type jwtParts struct {
	header map[string]any
	claims map[string]any
	// rawClaims is the payload segment as Hydra encoded it.
	rawClaims string
}

func decodeJWT(t *testing.T, tok string) jwtParts {
	t.Helper()
	seg := strings.Split(tok, ".")
	if len(seg) != 3 {
		t.Fatalf("token of %d segments", len(seg))
	}
	p := jwtParts{rawClaims: seg[1]}
	for i, dst := range []*map[string]any{&p.header, &p.claims} {
		b, err := base64.RawURLEncoding.DecodeString(seg[i])
		if err != nil {
			t.Fatalf("token segment %d: %v", i, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("token segment %d: %v", i, err)
		}
	}
	return p
}

func (p jwtParts) kid() string    { s, _ := p.header["kid"].(string); return s }
func (p jwtParts) exp() time.Time { f, _ := p.claims["exp"].(float64); return time.Unix(int64(f), 0) }

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// publishedRSAKey is the public key the issuer's JWKS publishes as kid.
func publishedRSAKey(t *testing.T, jwksURL, kid string) *rsa.PublicKey {
	t.Helper()
	resp, err := http.Get(jwksURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			Kid, Kty, N, E string
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	for _, k := range set.Keys {
		if k.Kid != kid || k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	t.Fatalf("the JWKS has no RSA key %s", kid)
	return nil
}

// publicPEM is the PKIX PEM of key: what an HS256 forgery keys its HMAC with.
func publicPEM(t *testing.T, key *rsa.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
