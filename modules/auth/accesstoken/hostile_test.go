package accesstoken

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

// hostileCase is a token and the refusal it must meet (kind 0: accepted).
type hostileCase struct {
	name  string
	token string
	kind  Kind
}

// hostileSigners are the issuer's keys in the hostile cases.
func hostileSigners() []testidp.Key {
	return []testidp.Key{
		{KID: "rsa-a", Signer: rsaA},
		{KID: "rsa-ps", Alg: "PS256", Signer: rsaB},
		{KID: "ec-256", Alg: "ES256", Signer: ecP256},
		{KID: "ed", Signer: edKey},
	}
}

// hostileCases builds every hostile token against issuer p (whose keys are
// hostileSigners) at now; attacker is a URL serving the attacker's keys.
func hostileCases(p *testidp.Server, attacker string, now time.Time) []hostileCase {
	good := testidp.Key{KID: "rsa-a", Signer: rsaA}
	evil := testidp.Key{KID: "evil", Signer: rsaEvil}
	base := claimsFor(p, now)
	payload := func(edit func(map[string]any)) string {
		c := maps.Clone(base)
		if edit != nil {
			edit(c)
		}
		return mustJSON(c)
	}
	header := func(edit func(map[string]any)) string {
		h := map[string]any{"alg": "RS256", "typ": "at+jwt", "kid": "rsa-a"}
		if edit != nil {
			edit(h)
		}
		return mustJSON(h)
	}
	rs := func(h, pl string, key any) string { return testidp.SignRaw(h, pl, jwt.SigningMethodRS256, key) }
	withClaims := func(edit func(map[string]any)) string { return rs(header(nil), payload(edit), rsaA) }
	withHeader := func(edit func(map[string]any)) string { return rs(header(edit), payload(nil), rsaA) }
	// replace swaps a member's JSON text in the good payload.
	replace := func(old, new string) string {
		pl := payload(nil)
		if !strings.Contains(pl, old) {
			panic("no " + old + " in " + pl)
		}
		return rs(header(nil), strings.Replace(pl, old, new, 1), rsaA)
	}
	exp := `"exp":` + mustJSON(base["exp"])

	pubDER, _ := x509.MarshalPKIXPublicKey(&rsaA.PublicKey)
	pemPKIX := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	pemPKCS1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&rsaA.PublicKey)})
	hsInput := b64u([]byte(header(nil))) + "." + b64u([]byte(payload(nil)))
	hsSig, _ := jwt.SigningMethodHS256.Sign(hsInput, pemPKIX)
	certDER, _ := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "attacker"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
	}, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "attacker"}}, &rsaEvil.PublicKey, rsaEvil)
	good0 := testidp.Sign(good, base)
	parts := strings.Split(good0, ".")
	huge := payload(func(c map[string]any) { c["pad"] = strings.Repeat("x", DefaultMaxTokenSize) })

	return []hostileCase{
		{"good", good0, 0},

		// Algorithms.
		{"alg none", testidp.SignRaw(`{"alg":"none","typ":"JWT"}`, payload(nil), nil, nil), DisallowedAlgorithm},
		{"alg None", testidp.SignRaw(`{"alg":"None","kid":"rsa-a"}`, payload(nil), nil, nil), DisallowedAlgorithm},
		{"alg none with a signature", testidp.SignRaw(`{"alg":"none","kid":"rsa-a"}`, payload(nil), jwt.SigningMethodRS256, rsaA), DisallowedAlgorithm},
		{"alg empty", withHeader(func(h map[string]any) { h["alg"] = "" }), DisallowedAlgorithm},
		{"alg missing", withHeader(func(h map[string]any) { delete(h, "alg") }), Malformed},
		{"alg a number", withHeader(func(h map[string]any) { h["alg"] = 256 }), Malformed},
		{"HS256 keyed with the RSA public key PEM", testidp.SignRaw(header(func(h map[string]any) { h["alg"] = "HS256" }), payload(nil), jwt.SigningMethodHS256, pemPKIX), DisallowedAlgorithm},
		{"HS256 keyed with the PKCS1 PEM", testidp.SignRaw(header(func(h map[string]any) { h["alg"] = "HS256" }), payload(nil), jwt.SigningMethodHS256, pemPKCS1), DisallowedAlgorithm},
		{"HS256 keyed with the JWK n bytes", testidp.SignRaw(header(func(h map[string]any) { h["alg"] = "HS256" }), payload(nil), jwt.SigningMethodHS256, rsaA.N.Bytes()), DisallowedAlgorithm},
		{"HS256 keyed with the JWK n text", testidp.SignRaw(header(func(h map[string]any) { h["alg"] = "HS256" }), payload(nil), jwt.SigningMethodHS256, []byte(b64u(rsaA.N.Bytes()))), DisallowedAlgorithm},
		{"RS256 header, HMAC signature keyed with the PEM", hsInput + "." + b64u(hsSig), BadSignature},
		{"ES256 with an RSA key's kid", testidp.SignRaw(header(func(h map[string]any) { h["alg"] = "ES256" }), payload(nil), jwt.SigningMethodES256, ecP256), DisallowedAlgorithm},
		{"RS256 with an EC key's kid", rs(header(func(h map[string]any) { h["kid"] = "ec-256" }), payload(nil), rsaA), DisallowedAlgorithm},
		{"RS256 with a PS256 key's kid", rs(header(func(h map[string]any) { h["kid"] = "rsa-ps" }), payload(nil), rsaB), DisallowedAlgorithm},
		{"EdDSA with an RSA key's kid", testidp.SignRaw(header(func(h map[string]any) { h["alg"] = "EdDSA" }), payload(nil), jwt.SigningMethodEdDSA, edKey), DisallowedAlgorithm},

		// kid is a map key, nothing else.
		{"kid path", testidp.Sign(testidp.Key{KID: "../../../../etc/passwd", Signer: rsaEvil}, base), UnknownKey},
		{"kid SQL", testidp.Sign(testidp.Key{KID: "' OR '1'='1' --", Signer: rsaEvil}, base), UnknownKey},
		{"kid URL", testidp.Sign(testidp.Key{KID: attacker + "/jwks", Signer: rsaEvil}, base), UnknownKey},
		{"kid with NUL", testidp.Sign(testidp.Key{KID: "rsa-a\x00", Signer: rsaEvil}, base), UnknownKey},
		{"kid a number", withHeader(func(h map[string]any) { h["kid"] = 1 }), Malformed},

		// Headers that name keys are never read.
		{"jku to the attacker, attacker kid", rs(header(func(h map[string]any) { h["jku"], h["kid"] = attacker+"/jwks", "evil" }), payload(nil), rsaEvil), UnknownKey},
		{"jku to the attacker, issuer kid", rs(header(func(h map[string]any) { h["jku"] = attacker + "/jwks" }), payload(nil), rsaEvil), BadSignature},
		{"x5u to the attacker", rs(header(func(h map[string]any) { h["x5u"] = attacker + "/cert.pem" }), payload(nil), rsaEvil), BadSignature},
		{"jwk of the attacker, attacker kid", rs(header(func(h map[string]any) { h["jwk"], h["kid"] = evil.JWK(), "evil" }), payload(nil), rsaEvil), UnknownKey},
		{"jwk of the attacker, issuer kid", rs(header(func(h map[string]any) { h["jwk"] = evil.JWK() }), payload(nil), rsaEvil), BadSignature},
		{"x5c of the attacker", rs(header(func(h map[string]any) { h["x5c"] = []string{b64std(certDER)} }), payload(nil), rsaEvil), BadSignature},

		// Size and structure.
		{"huge", rs(header(nil), huge, rsaA), TooLarge},
		{"empty", "", Malformed},
		{"two segments", parts[0] + "." + parts[1], Malformed},
		{"four segments", good0 + ".x", Malformed},
		{"JWE shape", parts[0] + ".a.b.c.d", Malformed},
		{"padded segment", parts[0] + "=." + parts[1] + "." + parts[2], Malformed},
		{"standard base64", strings.NewReplacer("-", "+", "_", "/").Replace(parts[0]) + "+." + parts[1] + "." + parts[2], Malformed},
		{"header not an object", rs(`["RS256"]`, payload(nil), rsaA), Malformed},
		{"payload an array", rs(header(nil), `[1]`, rsaA), Malformed},
		{"payload a nested JWT", rs(header(nil), mustJSON(good0), rsaA), Malformed},
		{"data after the payload", rs(header(nil), payload(nil)+`{}`, rsaA), Malformed},
		{"payload invalid UTF-8", rs(header(nil), strings.Replace(payload(nil), "user-1", "user-\xff", 1), rsaA), Malformed},
		{"nested JWT (cty)", withHeader(func(h map[string]any) { h["cty"] = "JWT" }), NotAnAccessToken},
		{"crit", withHeader(func(h map[string]any) { h["crit"], h["exp"] = []string{"exp"}, 1 }), Malformed},
		{"crit b64", withHeader(func(h map[string]any) { h["crit"], h["b64"] = []string{"b64"}, false }), Malformed},
		{"duplicate claim", replace(`"sub":"auth0|user-1"`, `"sub":"auth0|user-1","sub":"admin"`), Malformed},
		{"duplicate claim, escaped name", replace(`"sub":"auth0|user-1"`, `"sub":"auth0|user-1","s\u0075b":"admin"`), Malformed},
		{"duplicate tier claim", replace(`"scope"`, `"https://civicgate.example/tier":"enterprise","scope"`), Malformed},
		{"duplicate header alg", rs(`{"alg":"RS256","kid":"rsa-a","alg":"none"}`, payload(nil), rsaA), Malformed},
		{"tampered payload", parts[0] + "." + b64u([]byte(payload(func(c map[string]any) { c["sub"] = "admin" }))) + "." + parts[2], BadSignature},
		{"truncated signature", parts[0] + "." + parts[1] + "." + b64u(mustB64(parts[2])[:255]), BadSignature},
		{"signature with non-zero padding bits", parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-1] + "B", Malformed},
		{"no signature", parts[0] + "." + parts[1] + ".", BadSignature},
		{"signed by the attacker", rs(header(nil), payload(nil), rsaEvil), BadSignature},

		// Claim types and ranges.
		{"exp a string", replace(exp, `"exp":"`+mustJSON(base["exp"])+`"`), Malformed},
		{"exp a fraction", replace(exp, exp+`.5`), 0},
		{"exp 1e300", replace(exp, `"exp":1e300`), Malformed},
		{"exp 1e400", replace(exp, `"exp":1e400`), Malformed},
		{"exp negative", replace(exp, `"exp":-1`), Malformed},
		{"exp true", replace(exp, `"exp":true`), Malformed},
		{"exp null", replace(exp, `"exp":null`), Malformed},
		{"exp missing", withClaims(func(c map[string]any) { delete(c, "exp") }), MissingClaim},
		{"exp past", withClaims(func(c map[string]any) { c["exp"] = now.Add(-DefaultLeeway - time.Second).Unix() }), Expired},
		{"exp within the leeway", withClaims(func(c map[string]any) { c["exp"] = now.Add(-DefaultLeeway + time.Second).Unix() }), 0},
		{"nbf a string", withClaims(func(c map[string]any) { c["nbf"] = "0" }), Malformed},
		{"nbf future", withClaims(func(c map[string]any) { c["nbf"] = now.Add(DefaultLeeway + time.Second).Unix() }), NotYetValid},
		{"nbf within the leeway", withClaims(func(c map[string]any) { c["nbf"] = now.Add(DefaultLeeway - time.Second).Unix() }), 0},
		{"iat future", withClaims(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() }), NotYetValid},
		{"iat 1e300", withClaims(func(c map[string]any) { c["iat"] = 1e300 }), Malformed},
		{"aud array with the audience", withClaims(func(c map[string]any) { c["aud"] = []string{"other", testAudience} }), 0},
		{"aud array without the audience", withClaims(func(c map[string]any) { c["aud"] = []string{"other", testAudience + "/"} }), WrongAudience},
		{"aud other", withClaims(func(c map[string]any) { c["aud"] = "https://other.example" }), WrongAudience},
		{"aud missing", withClaims(func(c map[string]any) { delete(c, "aud") }), WrongAudience},
		{"aud a number", withClaims(func(c map[string]any) { c["aud"] = 1 }), Malformed},
		{"aud array of numbers", withClaims(func(c map[string]any) { c["aud"] = []int{1} }), Malformed},
		{"iss other", withClaims(func(c map[string]any) { c["iss"] = "https://evil.example" }), WrongIssuer},
		{"iss with a trailing slash", withClaims(func(c map[string]any) { c["iss"] = p.Issuer() + "/" }), WrongIssuer},
		{"iss missing", withClaims(func(c map[string]any) { delete(c, "iss") }), WrongIssuer},
		{"iss a number", withClaims(func(c map[string]any) { c["iss"] = 1 }), Malformed},
		{"sub missing", withClaims(func(c map[string]any) { delete(c, "sub") }), MissingClaim},
		{"sub an object", withClaims(func(c map[string]any) { c["sub"] = map[string]any{"id": 1} }), Malformed},
		{"scope a number", withClaims(func(c map[string]any) { c["scope"] = 1 }), Malformed},

		// Access tokens only.
		{"typ JWT", withHeader(func(h map[string]any) { h["typ"] = "JWT" }), 0},
		{"typ application/at+jwt", withHeader(func(h map[string]any) { h["typ"] = "application/at+jwt" }), 0},
		{"typ absent", withHeader(func(h map[string]any) { delete(h, "typ") }), 0},
		{"typ dpop+jwt", withHeader(func(h map[string]any) { h["typ"] = "dpop+jwt" }), NotAnAccessToken},
		{"typ id_token", withHeader(func(h map[string]any) { h["typ"] = "id_token+jwt" }), NotAnAccessToken},
		{"typ a number", withHeader(func(h map[string]any) { h["typ"] = 1 }), Malformed},
		{"ID token: at_hash", withClaims(func(c map[string]any) { c["at_hash"] = "x" }), NotAnAccessToken},
		{"ID token: c_hash", withClaims(func(c map[string]any) { c["c_hash"] = "x" }), NotAnAccessToken},
		{"ID token: nonce, no scope", withClaims(func(c map[string]any) { c["nonce"] = "n"; delete(c, "scope") }), NotAnAccessToken},
		{"nonce with a scope", withClaims(func(c map[string]any) { c["nonce"] = "n" }), 0},
		{"Keycloak ID token", withClaims(func(c map[string]any) { c["typ"] = "ID" }), NotAnAccessToken},
		{"Keycloak access token", withClaims(func(c map[string]any) { c["typ"] = "Bearer" }), 0},

		// No kid: the one key for the algorithm.
		{"no kid, one RSA key for RS256", withHeader(func(h map[string]any) { delete(h, "kid") }), 0},
		{"no kid, EdDSA", testidp.SignRaw(`{"alg":"EdDSA"}`, payload(nil), jwt.SigningMethodEdDSA, edKey), 0},
	}
}

func mustB64(s string) []byte {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func b64std(b []byte) string {
	out, _ := json.Marshal(b) // standard base64, as x5c is
	return strings.Trim(string(out), `"`)
}

// attackerServer serves the attacker's key set and counts requests: a
// hostile header must never make the verifier fetch from it.
func attackerServer(t testing.TB) (string, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{testidp.Key{KID: "evil", Signer: rsaEvil}.JWK()}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

func TestHostileTokens(t *testing.T) {
	p := testidp.Start(t, hostileSigners()...)
	attacker, attackerHits := attackerServer(t)
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	for _, tc := range hostileCases(p, attacker, clock.Now()) {
		t.Run(tc.name, func(t *testing.T) {
			id, err := v.Verify(t.Context(), tc.token)
			if tc.kind == 0 {
				if err != nil || id.Subject != "auth0|user-1" {
					t.Fatalf("refused: %v (identity %+v)", err, id)
				}
				return
			}
			wantKind(t, err, tc.kind)
			if id.Subject != "" {
				t.Fatalf("a refusal returned an identity: %+v", id)
			}
		})
	}
	if n := attackerHits.Load(); n != 0 {
		t.Fatalf("the attacker's server was asked %d times", n)
	}
	if n := p.JWKSFetches(); n != 1 {
		t.Fatalf("%d key set fetches, want 1: the frozen clock keeps every unknown kid within the refresh interval", n)
	}
}

func TestNoKidAmbiguous(t *testing.T) {
	p := testidp.Start(t, testidp.Key{KID: "a", Signer: rsaA}, testidp.Key{KID: "b", Signer: rsaB})
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	tok := testidp.SignRaw(`{"alg":"RS256"}`, mustJSON(claimsFor(p, clock.Now())), jwt.SigningMethodRS256, rsaA)
	wantKind(t, verifyErr(v, tok), UnknownKey)
}
