package accesstoken

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

func TestParseJWKSIgnoresUnusableKeys(t *testing.T) {
	good := testidp.Key{KID: "good", Signer: rsaA}.JWK()
	ec := testidp.Key{KID: "ec", Signer: ecP256}.JWK()
	ed := testidp.Key{KID: "ed", Signer: edKey}.JWK()
	edit := func(base map[string]any, kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	small := testidp.Key{KID: "small", Signer: rsaA}.JWK()
	small["n"] = b64u(rsaA.N.Bytes()[:128]) // 1024 bits
	offCurve := edit(ec, "kid", "off-curve")
	offCurve["y"] = offCurve["x"]

	bad := map[string]map[string]any{
		"enc":           edit(good, "kid", "enc", "use", "enc"),
		"private":       edit(good, "kid", "private", "d", "AQAB"),
		"key_ops":       edit(good, "kid", "key_ops", "key_ops", []string{"encrypt"}),
		"HS alg":        edit(good, "kid", "hs", "alg", "HS256"),
		"alg mismatch":  edit(good, "kid", "mismatch", "alg", "ES256"),
		"oct":           {"kty": "oct", "kid": "oct", "k": "c2VjcmV0"},
		"small RSA":     small,
		"even exponent": edit(good, "kid", "even-e", "e", b64u([]byte{2})),
		"bad base64":    edit(good, "kid", "b64", "n", "!!"),
		"P-192":         edit(ec, "kid", "p192", "crv", "P-192"),
		"off curve":     offCurve,
		"short x":       edit(ec, "kid", "short", "x", b64u([]byte{1, 2})),
		"X25519":        edit(ed, "kid", "x25519", "crv", "X25519"),
		"Ed25519 short": edit(ed, "kid", "ed-short", "x", b64u(make([]byte, 31))),
	}
	keys := []any{good, ec, ed, "not an object"}
	for _, k := range bad {
		keys = append(keys, k)
	}
	set, ignored, err := parseJWKS([]byte(mustJSON(map[string]any{"keys": keys})))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.all) != 3 || set.ignored != len(bad)+1 || len(ignored) != len(bad)+1 {
		t.Fatalf("%d keys, %d ignored (%v), want 3 and %d", len(set.all), set.ignored, ignored, len(bad)+1)
	}
	for _, ig := range ignored {
		if ig.reason == "" {
			t.Errorf("key %q ignored without a reason", ig.kid)
		}
		if strings.Contains(ig.reason, b64u(rsaA.N.Bytes())[:16]) {
			t.Errorf("reason %q holds key material", ig.reason)
		}
	}
	if _, _, err := parseJWKS([]byte(mustJSON(map[string]any{"keys": []any{bad["enc"]}}))); err == nil {
		t.Fatal("a set without a usable key was accepted")
	}
	if _, _, err := parseJWKS([]byte(`[]`)); err == nil {
		t.Fatal("a non-object was accepted")
	}
}

// One kid for two algorithms: each token finds the key of its own.
func TestKidListedTwice(t *testing.T) {
	ps := testidp.Key{KID: "k", Alg: "PS256", Signer: rsaB}
	rs := testidp.Key{KID: "k", Alg: "RS256", Signer: rsaA}
	p := testidp.Start(t, ps, rs)
	clock := newClock()
	v := newVerifier(t, testConfig(p, clock))
	mustVerify(t, v, testidp.Sign(ps, claimsFor(p, clock.Now())))
	mustVerify(t, v, testidp.Sign(rs, claimsFor(p, clock.Now())))
	wantKind(t, verifyErr(v, testidp.Sign(testidp.Key{KID: "k", Signer: rsaB}, claimsFor(p, clock.Now()))), BadSignature)
}

func TestCacheLifetime(t *testing.T) {
	lo, hi := 5*time.Minute, 24*time.Hour
	for cc, want := range map[string]time.Duration{
		"":                          lo,
		"max-age=60":                lo,
		"max-age=3600":              time.Hour,
		"public, max-age=7200, x=1": 2 * time.Hour,
		`max-age="900"`:             15 * time.Minute,
		"max-age=99999999999999999": hi,
		"max-age=-5":                lo,
		"max-age=abc":               lo,
		"no-cache, max-age=3600":    lo,
		"max-age=3600, no-store":    lo,
		"MAX-AGE=3600":              time.Hour,
	} {
		h := http.Header{}
		if cc != "" {
			h.Set("Cache-Control", cc)
		}
		if got := cacheLifetime(h, lo, hi); got != want {
			t.Errorf("%q: %s, want %s", cc, got, want)
		}
	}
}
