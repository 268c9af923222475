package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// issuer is the stand-in identity provider: one signing key, its public half
// as a JWKS, OpenID discovery pointing at it, and access tokens signed with it.
// It is a bench tool: the gateway's verifier (modules/auth/accesstoken) is
// the real one, only this issuer is ours.
type issuer struct {
	url    string // the iss of every token and the discovery document's issuer
	alg    string // RS256 or ES256
	kid    string
	signer crypto.Signer
	method jwt.SigningMethod
	jwks   []byte
	maxAge time.Duration // the key set's Cache-Control max-age
}

// newIssuer generates a key for alg (RS256: RSA 2048; ES256: P-256).
func newIssuer(url, alg string, maxAge time.Duration) (*issuer, error) {
	is := &issuer{url: url, alg: alg, maxAge: maxAge}
	b64 := base64.RawURLEncoding.EncodeToString
	var jwk map[string]string
	switch alg {
	case "RS256":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, fmt.Errorf("generate RSA key: %w", err)
		}
		is.signer, is.method = k, jwt.SigningMethodRS256
		jwk = map[string]string{"kty": "RSA", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case "ES256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate P-256 key: %w", err)
		}
		point, err := k.PublicKey.Bytes() // 0x04 ‖ X ‖ Y, each 32 bytes
		if err != nil {
			return nil, fmt.Errorf("P-256 public key: %w", err)
		}
		is.signer, is.method = k, jwt.SigningMethodES256
		jwk = map[string]string{"kty": "EC", "crv": "P-256", "x": b64(point[1:33]), "y": b64(point[33:])}
	default:
		return nil, fmt.Errorf("--alg %q: want RS256 or ES256", alg)
	}
	// The kid is derived from the public key, as many providers do: a new
	// run's key never shares the previous run's kid.
	pub, err := json.Marshal(jwk)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	sum := sha256.Sum256(pub)
	is.kid = b64(sum[:12])
	jwk["kid"], jwk["alg"], jwk["use"] = is.kid, alg, "sig"
	is.jwks, err = json.Marshal(map[string]any{"keys": []map[string]string{jwk}})
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	return is, nil
}

// handler serves discovery and the key set; everything else is 404.
func (is *issuer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.url,
			"jwks_uri":                              is.url + "/jwks.json",
			"id_token_signing_alg_values_supported": []string{is.alg},
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
		})
	})
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(is.maxAge.Seconds())))
		_, _ = w.Write(is.jwks)
	})
	return mux
}

// grant is what every token of one run carries besides its subject.
type grant struct {
	audience string
	plan     string // the tier claim: a tier line of the gateway's Caddyfile
	org      string // org_id
	ttl      time.Duration
}

// sign returns n tokens: token i has subject subjects[i % len(subjects)] and
// its own jti, so no two are the same bytes. Signing runs on every core (an
// RS256 signature is about a millisecond).
func (is *issuer) sign(g grant, subjects []string, n int, now time.Time) ([]string, error) {
	out := make([]string, n)
	errs := make([]error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += len(errs) {
				tok, err := is.signOne(g, subjects[i%len(subjects)], now)
				if err != nil {
					errs[w] = err
					return
				}
				out[i] = tok
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// signOne is one RFC 9068 access token (typ at+jwt).
func (is *issuer) signOne(g grant, subject string, now time.Time) (string, error) {
	var jti [12]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", fmt.Errorf("jti: %w", err)
	}
	claims := jwt.MapClaims{
		"iss": is.url, "aud": g.audience, "sub": subject, "client_id": "civicgate-bench",
		"iat": now.Unix(), "exp": now.Add(g.ttl).Unix(), "jti": base64.RawURLEncoding.EncodeToString(jti[:]),
		"plan": g.plan, "org_id": g.org,
	}
	tok := jwt.NewWithClaims(is.method, claims)
	tok.Header["kid"], tok.Header["typ"] = is.kid, "at+jwt"
	s, err := tok.SignedString(is.signer)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return s, nil
}
