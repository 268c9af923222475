// Package testidp is the identity provider of the access-token tests: signing
// keys of every kind the gateway verifies, their JWKs, tokens signed with
// them (well-formed, or with a header and payload the test writes byte for
// byte, for the hostile cases), and Server, discovery and a key set over real
// HTTP on 127.0.0.1 that a test can rotate, cache-control and take down.
//
// It is a test-support package: only tests import it. Signing panics on a
// key that does not fit the alg (a mistake in the test, like httptest's
// panics), so tokens can be made where no testing.TB is at hand.
package testidp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// Key is a private key as an identity provider publishes it: Signer's public
// half under the JWK members KID, Alg and Use. A hostile case builds one as a
// literal with the kid, alg and use it needs (a known kid over another key, a
// key without an alg member, an "enc" key).
type Key struct {
	// KID is the JWK's kid and the kid Sign writes in the header ("": none).
	KID string
	// Alg is the JWK's alg member and the alg Sign signs with; "" leaves
	// the member out, and Sign uses the key type's usual alg (Algorithm).
	Alg string
	// Use is the JWK's use member; "" stands for "sig".
	Use string
	// Signer is the private key: *rsa.PrivateKey, *ecdsa.PrivateKey or
	// ed25519.PrivateKey.
	Signer crypto.Signer
}

// NewKey generates a key for alg (RS256, RS384, RS512, PS256, PS384, PS512:
// RSA 2048; ES256: P-256; ES384: P-384; ES512: P-521; EdDSA: Ed25519),
// published as kid "<alg>-<random hex>", alg alg, use sig. An RSA key takes
// up to a second on a loaded machine: tests that need many share them.
func NewKey(t testing.TB, alg string) Key {
	t.Helper()
	s, err := newSigner(alg)
	if err != nil {
		t.Fatalf("testidp: %v", err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix) // crypto/rand.Read never fails
	return Key{KID: strings.ToLower(alg) + "-" + hex.EncodeToString(suffix), Alg: alg, Use: "sig", Signer: s}
}

// MustSigner generates a private key the way NewKey does, for keys a test
// binary makes once (TestMain, sync.Once) where no testing.TB is at hand; it
// panics when alg is not one NewKey knows.
func MustSigner(alg string) crypto.Signer {
	s, err := newSigner(alg)
	if err != nil {
		panic("testidp: " + err.Error())
	}
	return s
}

func newSigner(alg string) (crypto.Signer, error) {
	var (
		s   crypto.Signer
		err error
	)
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		s, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		s, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		s, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ES512":
		s, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "EdDSA":
		_, s, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("no key type for alg %q", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("generate a key for %s: %w", alg, err)
	}
	return s, nil
}

// Algorithm is the alg k signs with: Alg, or when that is empty the key
// type's usual one (RS256; ES256, ES384 or ES512 by curve; EdDSA).
func (k Key) Algorithm() string {
	if k.Alg != "" {
		return k.Alg
	}
	switch pub := k.Signer.Public().(type) {
	case *rsa.PublicKey:
		return "RS256"
	case *ecdsa.PublicKey:
		switch pub.Curve {
		case elliptic.P384():
			return "ES384"
		case elliptic.P521():
			return "ES512"
		}
		return "ES256"
	case ed25519.PublicKey:
		return "EdDSA"
	}
	panic(fmt.Sprintf("testidp: no alg for a %T key", k.Signer))
}

// JWK is k's public key as a key set publishes it (RFC 7517, RFC 8037). The
// map is the caller's: a test may edit it into a shape Key cannot express.
func (k Key) JWK() map[string]any {
	m := map[string]any{"kid": k.KID, "use": k.Use}
	if k.Use == "" {
		m["use"] = "sig"
	}
	if k.Alg != "" {
		m["alg"] = k.Alg
	}
	switch pub := k.Signer.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		b, err := pub.Bytes() // 0x04 || x || y
		if err != nil {
			panic("testidp: " + err.Error())
		}
		size := (len(b) - 1) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", pub.Curve.Params().Name, b64(b[1:1+size]), b64(b[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(pub)
	default:
		panic(fmt.Sprintf("testidp: no JWK for a %T key", k.Signer))
	}
	return m
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
