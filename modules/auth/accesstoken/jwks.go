package accesstoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync/atomic"
)

// keyFamily is what a key can verify: RSA (RS*, PS*), one ECDSA curve
// (ES256 P-256, ES384 P-384, ES512 P-521) or Ed25519 (EdDSA).
type keyFamily uint8

const (
	familyRSA keyFamily = iota + 1
	familyP256
	familyP384
	familyP521
	familyEd25519
)

// algFamily is the key family an algorithm needs.
func algFamily(alg string) keyFamily {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		return familyRSA
	case "ES256":
		return familyP256
	case "ES384":
		return familyP384
	case "ES512":
		return familyP521
	case "EdDSA":
		return familyEd25519
	}
	return 0
}

// jwk is one usable verification key of the issuer's set.
type jwk struct {
	kid    string
	alg    string // the key's own alg member, "" when absent
	family keyFamily
	pub    crypto.PublicKey
	// retired is set when a refresh no longer lists the key: cached
	// verifications made with it stop counting.
	retired atomic.Bool
}

// accepts reports whether a token signed with alg may be verified by k: the
// key's type fits the algorithm, and the key's own alg, if any, is alg.
func (k *jwk) accepts(alg string) bool {
	return algFamily(alg) == k.family && (k.alg == "" || k.alg == alg)
}

// sameKey reports whether o is k again (kid, alg and key material).
func (k *jwk) sameKey(o *jwk) bool {
	eq, ok := k.pub.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.kid == o.kid && k.alg == o.alg && k.family == o.family && eq.Equal(o.pub)
}

// keySet is one fetched JWKS, immutable once installed.
type keySet struct {
	byKid   map[string][]*jwk // a kid listed twice (e.g. for two algorithms) keeps both
	all     []*jwk
	ignored int
}

// ignoredKey is a key of the document that cannot be used, and why;
// routine when it is not meant for signatures (Keycloak publishes its
// encryption key beside its signing keys): not worth a warning.
type ignoredKey struct {
	kid, reason string
	routine     bool
}

// maxKeys bounds the usable keys kept from one document.
const maxKeys = 100

// parseJWKS reads a JWK set. A key that cannot be used is ignored (and
// reported), never the whole set; a set with no usable key is an error.
func parseJWKS(body []byte) (*keySet, []ignoredKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, errors.New("not a JWK set (a JSON object with a keys array)")
	}
	set := &keySet{byKid: map[string][]*jwk{}}
	var ignored []ignoredKey
	for _, raw := range doc.Keys {
		var r rawJWK
		if err := json.Unmarshal(raw, &r); err != nil {
			ignored = append(ignored, ignoredKey{"", "not a JWK object", false})
			continue
		}
		k, err := r.parse()
		if err == nil && len(set.all) == maxKeys {
			err = fmt.Errorf("more than %d usable keys", maxKeys)
		}
		if err != nil {
			ignored = append(ignored, ignoredKey{r.Kid, err.Error(), r.Use != "" && r.Use != "sig"})
			continue
		}
		set.all = append(set.all, k)
		set.byKid[k.kid] = append(set.byKid[k.kid], k)
	}
	set.ignored = len(ignored)
	if len(set.all) == 0 {
		return nil, ignored, fmt.Errorf("no usable key (%d keys, %d ignored)", len(doc.Keys), len(ignored))
	}
	return set, ignored, nil
}

// rawJWK is a JWK's members as published.
type rawJWK struct {
	Kty    string   `json:"kty"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Alg    string   `json:"alg"`
	Kid    string   `json:"kid"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	D      string   `json:"d"`
}

// RSA moduli outside these bounds are refused: below, too weak; above, a
// verification costs too much CPU for the tokens a flood could send.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

func (r *rawJWK) parse() (*jwk, error) {
	switch {
	case r.D != "":
		return nil, errors.New("holds private key material (d)")
	case r.Use != "" && r.Use != "sig":
		return nil, fmt.Errorf("use is %q, not sig", r.Use)
	case r.KeyOps != nil && !slices.Contains(r.KeyOps, "verify"):
		return nil, errors.New("key_ops without verify")
	case r.Alg != "" && algFamily(r.Alg) == 0:
		return nil, fmt.Errorf("alg %q is not an asymmetric signing algorithm", r.Alg)
	}
	k := &jwk{kid: r.Kid, alg: r.Alg}
	var err error
	switch r.Kty {
	case "RSA":
		k.family = familyRSA
		k.pub, err = r.rsaKey()
	case "EC":
		k.family, k.pub, err = r.ecKey()
	case "OKP":
		k.family = familyEd25519
		k.pub, err = r.ed25519Key()
	default:
		err = fmt.Errorf("kty %q is not RSA, EC or OKP", r.Kty)
	}
	if err != nil {
		return nil, err
	}
	if r.Alg != "" && algFamily(r.Alg) != k.family {
		return nil, fmt.Errorf("alg %q does not fit a %s key", r.Alg, r.Kty)
	}
	return k, nil
}

// b64 decodes a base64url member; padding, which some sets carry, is
// tolerated.
func b64(member, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("%s is not base64url", member)
	}
	return b, nil
}

func (r *rawJWK) rsaKey() (*rsa.PublicKey, error) {
	nb, err := b64("n", r.N)
	if err != nil {
		return nil, err
	}
	eb, err := b64("e", r.E)
	if err != nil {
		return nil, err
	}
	n := new(big.Int).SetBytes(nb)
	if bits := n.BitLen(); bits < minRSABits || bits > maxRSABits {
		return nil, fmt.Errorf("RSA modulus of %d bits (want %d to %d)", bits, minRSABits, maxRSABits)
	}
	if n.Bit(0) == 0 {
		return nil, errors.New("RSA modulus is even")
	}
	e := new(big.Int).SetBytes(eb)
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
		return nil, errors.New("RSA exponent is not an odd number from 3 to 2³¹-1")
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

func (r *rawJWK) ecKey() (keyFamily, *ecdsa.PublicKey, error) {
	var curve elliptic.Curve
	var family keyFamily
	switch r.Crv {
	case "P-256":
		curve, family = elliptic.P256(), familyP256
	case "P-384":
		curve, family = elliptic.P384(), familyP384
	case "P-521":
		curve, family = elliptic.P521(), familyP521
	default:
		return 0, nil, fmt.Errorf("EC crv %q is not P-256, P-384 or P-521", r.Crv)
	}
	size := (curve.Params().BitSize + 7) / 8
	x, err := b64("x", r.X)
	if err != nil {
		return 0, nil, err
	}
	y, err := b64("y", r.Y)
	if err != nil {
		return 0, nil, err
	}
	if len(x) != size || len(y) != size {
		return 0, nil, fmt.Errorf("EC coordinates of %d and %d bytes, want %d", len(x), len(y), size)
	}
	point := append(append([]byte{4}, x...), y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
	if err != nil {
		return 0, nil, errors.New("EC point is not on the curve")
	}
	return family, pub, nil
}

func (r *rawJWK) ed25519Key() (ed25519.PublicKey, error) {
	if r.Crv != "Ed25519" {
		return nil, fmt.Errorf("OKP crv %q is not Ed25519", r.Crv)
	}
	x, err := b64("x", r.X)
	if err != nil {
		return nil, err
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("Ed25519 key of %d bytes, want %d", len(x), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(x), nil
}

// find returns the key of set that verifies a token with this kid and alg.
// A kid the set lists for another key type or algorithm is
// DisallowedAlgorithm (the classic confusion: a key used with an algorithm
// it was not made for); no kid is accepted only when the set has exactly
// one key for alg.
func (s *keySet) find(kid string, hasKid bool, alg string) (*jwk, Kind) {
	if !hasKid {
		var found *jwk
		for _, k := range s.all {
			if k.accepts(alg) {
				if found != nil {
					return nil, UnknownKey
				}
				found = k
			}
		}
		if found == nil {
			return nil, UnknownKey
		}
		return found, 0
	}
	ks, ok := s.byKid[kid]
	if !ok {
		return nil, UnknownKey
	}
	for _, k := range ks {
		if k.accepts(alg) {
			return k, 0
		}
	}
	return nil, DisallowedAlgorithm
}

// reuse replaces each key of s that old holds unchanged by old's (so cached
// verifications made with it stay valid) and retires old's other keys.
func (s *keySet) reuse(old *keySet) {
	if old == nil {
		return
	}
	kept := map[*jwk]bool{}
	for i, k := range s.all {
		for _, o := range old.byKid[k.kid] {
			if o.sameKey(k) && !kept[o] {
				s.all[i], kept[o] = o, true
				break
			}
		}
	}
	clear(s.byKid)
	for _, k := range s.all {
		s.byKid[k.kid] = append(s.byKid[k.kid], k)
	}
	for _, o := range old.all {
		if !kept[o] {
			o.retired.Store(true)
		}
	}
}
