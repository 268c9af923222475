package reliability

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testhydra"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

// Hostile access tokens through the built gateway (docs/identity.md "How a
// token is checked", "Threat model additions"): the shipped Caddyfile.local
// with a jwt block naming a real ORY Hydra, and a corpus shaped to get a
// token admitted without the issuer's key — alg none in three spellings,
// HS256 keyed with the RSA public key, kids holding a path, SQL or a URL,
// jku/x5u/jwk/x5c naming an attacker's keys (never fetched), oversized,
// nested and duplicated tokens, claims of the wrong type — each answered
// with its exact body and challenge. A flood of forged tokens from one
// address meets failed_lookups' 429 after its burst, without a signature
// check. No answer and no log line holds a token or key material.

// tokCase is one hostile token and its answer: 200, or status with the body
// {"error":msg} and the challenge's error_description (challenge "-": the
// plain challenge of a key refusal).
type tokCase struct {
	name      string
	token     string
	status    int
	msg       string
	challenge string
}

// tokHostileTier is the tier of the corpus' genuine tokens.
const tokHostileTier = "enterprise"

func TestTokensHostile(t *testing.T) {
	idp := testhydra.Start(t, testhydra.Options{})
	s := stack.New(t, &bins)
	audience := s.HTTPSURL
	metadata := audience + "/.well-known/oauth-protected-resource"
	s.Prepare()
	s.StartRecordsd()
	gw := s.StartGateway(tokHostileCaddyfile(t, s.Root, idp.Issuer(), audience))
	const client, org = "svc-hostile", "idp-org-hostile"
	idp.CreateClient(t, client, "hostile-client-secret", []string{audience}, nil)
	idp.SetClaims(t, client, map[string]any{"plan": tokHostileTier, "org_id": org})
	issued := idp.Token(t, client, "hostile-client-secret", []string{audience}, nil)
	kid, key := tokIssuerKey(t, idp, issued)

	var attackerHits atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attackerHits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(attacker.Close)
	evil := testidp.NewKey(t, "RS256").Signer.(*rsa.PrivateKey)

	f := &tokForge{t: t, key: key, kid: kid, claims: map[string]any{
		"iss": idp.Issuer(), "aud": []string{audience}, "sub": client, "org_id": org, "plan": tokHostileTier,
	}}
	corpus := tokCorpus(t, f, issued, evil, attacker.URL)
	secrets := []string{b64(key.D.Bytes()), b64(key.Primes[0].Bytes()), b64(key.Primes[1].Bytes()), b64(evil.D.Bytes())}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, base64.StdEncoding.EncodeToString(pubDER)[64:128]) // the HS256 forgery's key, as PEM text
	challenge := func(c tokCase) string {
		switch c.challenge {
		case "":
			return ""
		case "-":
			return `Bearer realm="civicgate", resource_metadata="` + metadata + `"`
		}
		code := "invalid_token"
		if c.status == http.StatusForbidden {
			code = "insufficient_scope"
		}
		return `Bearer realm="civicgate", resource_metadata="` + metadata + `", error="` + code + `", error_description="` + c.challenge + `"`
	}

	// Every refusal counts against its address's failed_lookups (60/h, a
	// burst of 60): the corpus moves to another loopback address every 20.
	for i, c := range corpus {
		secrets = append(secrets, c.token)
		src := "127.0.0." + strconv.Itoa(10+i/20)
		st, body, hdr := tokGet(t, fromSource(s, src), s.HTTPSURL, c.token)
		want := `{"error":` + strconv.Quote(c.msg) + `}`
		switch {
		case c.status == http.StatusOK && st != http.StatusOK:
			t.Errorf("%s: %d %s, want 200", c.name, st, body)
		case c.status != http.StatusOK && (st != c.status || body != want):
			t.Errorf("%s: %d %s, want %d %s", c.name, st, body, c.status, want)
		case c.status != http.StatusOK && strings.Join(hdr.Values("Www-Authenticate"), "|") != challenge(c):
			t.Errorf("%s: WWW-Authenticate %q, want %q", c.name, hdr.Values("Www-Authenticate"), challenge(c))
		}
		tokNoEcho(t, c.name, c.token, body, hdr)
	}

	// A 1 MiB token never reaches civic_auth: the server's 16 KB header
	// bound answers first, before reading it all.
	huge := f.sign(f.header(nil), f.payload(func(c map[string]any) { c["pad"] = strings.Repeat("x", 1<<20) }))
	head := "GET /bills?limit=1 HTTP/1.1\r\nHost: " + strings.TrimPrefix(s.HTTPSURL, "https://") + "\r\nAuthorization: Bearer " + huge + "\r\nConnection: close\r\n"
	r, err := rawDo(s, head, nil, nil, 30*time.Second)
	if err != nil {
		t.Fatalf("1 MiB token: %v", err)
	}
	if r.status != http.StatusRequestHeaderFieldsTooLarge || r.body != "431 Request Header Fields Too Large" {
		t.Errorf("1 MiB token: %d %q, want 431", r.status, r.body)
	}
	t.Logf("1 MiB token answered %d in %s", r.status, r.elapsed.Round(time.Millisecond))
	secrets = append(secrets, huge)

	if n := attackerHits.Load(); n != 0 {
		t.Errorf("the attacker's server was asked %d times", n)
	}

	// A flood of distinct forged tokens (the issuer's kid, a random
	// signature) from one address: 401 until failed_lookups' burst is
	// spent, then 429 without a signature check.
	flooder := fromSource(s, "127.0.0.200")
	refusedBefore, throttledBefore := tokMetric(t, s, "token_bad_signature"), tokMetric(t, s, "throttled")
	const flood, workers = 500, 4
	var mu sync.Mutex
	counts := map[int]int{}
	unexpected, firstUnexpected := 0, ""
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < flood; i += workers {
				tok := f.forged(i)
				st, body, hdr := tokGet(t, flooder, s.HTTPSURL, tok)
				tokNoEcho(t, "flood", tok, body, hdr)
				expected := st == http.StatusUnauthorized && body == `{"error":"Invalid access token signature"}` ||
					st == http.StatusTooManyRequests && body == bodyRateLimit && hdr.Get("Retry-After") != ""
				mu.Lock()
				counts[st]++
				secrets = append(secrets, tok)
				if !expected {
					if unexpected == 0 {
						firstUnexpected = fmt.Sprintf("token %d: %d %s (Retry-After %q)", i, st, body, hdr.Get("Retry-After"))
					}
					unexpected++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if unexpected > 0 {
		t.Errorf("%d flood answers neither the bad-signature 401 nor the 429; the first: %s", unexpected, firstUnexpected)
	}
	t.Logf("flood of %d forged tokens in %s: %d refused 401, %d throttled 429", flood, elapsed.Round(time.Millisecond),
		counts[http.StatusUnauthorized], counts[http.StatusTooManyRequests])
	// A burst of 60, then one more a minute while the flood lasts.
	if n := counts[http.StatusUnauthorized]; n < 60 || float64(n) > 61+elapsed.Minutes() {
		t.Errorf("%d forged tokens verified and refused in %s, want the 60 of the burst and one a minute", n, elapsed)
	}
	if got := tokMetric(t, s, "token_bad_signature") - refusedBefore; got != float64(counts[http.StatusUnauthorized]) {
		t.Errorf("token_bad_signature counted %v refusals, the client saw %d", got, counts[http.StatusUnauthorized])
	}
	if got := tokMetric(t, s, "throttled") - throttledBefore; got != float64(counts[http.StatusTooManyRequests]) {
		t.Errorf("throttled counted %v, the client saw %d 429s", got, counts[http.StatusTooManyRequests])
	}
	// From the flooding address, a token seen before is still served (from
	// the cache); one not seen before is throttled; elsewhere it is served.
	if st, body, _ := tokGet(t, flooder, s.HTTPSURL, corpus[0].token); st != http.StatusOK {
		t.Errorf("a token verified before, from the flooding address: %d %s", st, body)
	}
	fresh := f.sign(f.header(nil), f.payload(nil))
	secrets = append(secrets, fresh)
	if st, body, _ := tokGet(t, flooder, s.HTTPSURL, fresh); st != http.StatusTooManyRequests || body != bodyRateLimit {
		t.Errorf("a new genuine token from the flooding address: %d %s, want 429", st, body)
	}
	if st, body, _ := tokGet(t, fromSource(s, "127.0.0.201"), s.HTTPSURL, fresh); st != http.StatusOK {
		t.Errorf("the same token from another address: %d %s", st, body)
	}
	if gw.Exited() {
		t.Fatal("the gateway exited")
	}
	s.CheckLogs(t, secrets...)
	tokLogHasNo(t, s, "-----BEGIN", "PRIVATE KEY")
}

// tokCorpus is the hostile corpus: genuine tokens signed with the issuer's
// key (f), Hydra's own token, forgeries, and the attacker's keys.
func tokCorpus(t *testing.T, f *tokForge, issued string, evil *rsa.PrivateKey, attacker string) []tokCase {
	const (
		disallowed = "Access token signing algorithm not accepted"
		unknownKey = "Access token signed by an unknown key"
		badSig     = "Invalid access token signature"
		malformed  = "Malformed access token"
		tooLarge   = "Access token too large"
		notAccess  = "Token is not an access token"
		wrongAud   = "Access token not issued for this API"
	)
	refused := func(name, tok, desc string) tokCase {
		return tokCase{name: name, token: tok, status: http.StatusUnauthorized, msg: desc, challenge: desc}
	}
	ok := func(name, tok string) tokCase { return tokCase{name: name, token: tok, status: http.StatusOK} }
	good := f.sign(f.header(nil), f.payload(nil))
	seg := strings.Split(good, ".")
	pl := f.payload(nil)
	withKid := func(kid string) func(map[string]any) { return func(h map[string]any) { h["kid"] = kid } }
	evilSigned := func(edit func(map[string]any)) string {
		return testidp.SignRaw(f.header(edit), pl, jwt.SigningMethodRS256, evil)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pemPKIX := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	pemPKCS1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&f.key.PublicKey)})
	hs := func(h string, secret []byte) string { return testidp.SignRaw(h, pl, jwt.SigningMethodHS256, secret) }
	hsHeader := f.header(func(h map[string]any) { h["alg"] = "HS256" })
	hsSig, err := jwt.SigningMethodHS256.Sign(b64([]byte(f.header(nil)))+"."+b64([]byte(pl)), pemPKIX)
	if err != nil {
		t.Fatal(err)
	}
	certDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(1),
		Subject: pkix.Name{CommonName: "attacker"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)},
		&x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "attacker"}}, &evil.PublicKey, evil)
	if err != nil {
		t.Fatal(err)
	}
	evilJWK := map[string]any{"kty": "RSA", "kid": "evil", "n": b64(evil.N.Bytes()), "e": "AQAB"}
	var plClaims struct{ Exp int64 }
	if err := json.Unmarshal([]byte(pl), &plClaims); err != nil {
		t.Fatal(err)
	}
	exp := fmt.Sprintf(`"exp":%d`, plClaims.Exp)
	// replaced swaps a member of the genuine payload's JSON text.
	replaced := func(old, new string) string {
		if !strings.Contains(pl, old) {
			t.Fatalf("no %s in %s", old, pl)
		}
		return f.sign(f.header(nil), strings.Replace(pl, old, new, 1))
	}
	// sized is a genuine token of about size bytes (a pad claim).
	sized := func(size int) string {
		padded := func(n int) string {
			return f.sign(f.header(nil), f.payload(func(c map[string]any) { c["pad"] = strings.Repeat("x", n) }))
		}
		tok := padded((size - len(padded(0))) * 3 / 4)
		if d := len(tok) - size; d < -4 || d > 4 {
			t.Fatalf("a token of %d bytes, want %d", len(tok), size)
		}
		return tok
	}

	return []tokCase{
		ok("good", good),
		ok("issued by Hydra", issued),

		refused("alg none", testidp.SignRaw(`{"alg":"none","typ":"JWT","kid":"`+f.kid+`"}`, pl, nil, nil), disallowed),
		refused("alg None", testidp.SignRaw(`{"alg":"None","kid":"`+f.kid+`"}`, pl, nil, nil), disallowed),
		refused("alg nOnE", testidp.SignRaw(`{"alg":"nOnE","kid":"`+f.kid+`"}`, pl, nil, nil), disallowed),
		refused("alg none with a signature", testidp.SignRaw(`{"alg":"none","kid":"`+f.kid+`"}`, pl, jwt.SigningMethodRS256, f.key), disallowed),
		refused("HS256 keyed with the public key PEM", hs(hsHeader, pemPKIX), disallowed),
		refused("HS256 keyed with the PKCS1 PEM", hs(hsHeader, pemPKCS1), disallowed),
		refused("HS256 keyed with the JWK n", hs(hsHeader, []byte(b64(f.key.N.Bytes()))), disallowed),
		refused("RS256 header, HMAC keyed with the PEM", seg[0]+"."+seg[1]+"."+b64(hsSig), badSig),

		refused("kid path traversal", evilSigned(withKid("../../../../etc/passwd")), unknownKey),
		refused("kid SQL", evilSigned(withKid("' OR '1'='1' --")), unknownKey),
		refused("kid URL", evilSigned(withKid(attacker+"/jwks")), unknownKey),
		refused("jku to the attacker, attacker kid", evilSigned(func(h map[string]any) { h["jku"], h["kid"] = attacker+"/jwks", "evil" }), unknownKey),
		refused("jku to the attacker, issuer kid", evilSigned(func(h map[string]any) { h["jku"] = attacker + "/jwks" }), badSig),
		refused("x5u to the attacker", evilSigned(func(h map[string]any) { h["x5u"] = attacker + "/cert.pem" }), badSig),
		refused("jwk of the attacker, attacker kid", evilSigned(func(h map[string]any) { h["jwk"], h["kid"] = evilJWK, "evil" }), unknownKey),
		refused("jwk of the attacker, issuer kid", evilSigned(func(h map[string]any) { h["jwk"] = evilJWK }), badSig),
		refused("x5c of the attacker", evilSigned(func(h map[string]any) { h["x5c"] = []string{base64.StdEncoding.EncodeToString(certDER)} }), badSig),
		refused("signed by the attacker", evilSigned(nil), badSig),
		refused("tampered payload", seg[0]+"."+b64([]byte(strings.Replace(pl, `"sub":"`, `"sub":"x`, 1)))+"."+seg[2], badSig),

		refused("9 KiB", sized(9<<10), tooLarge),
		refused("14 KiB, under the 16 KB header bound", sized(14<<10), tooLarge),
		refused("nested JWT (cty)", f.sign(f.header(func(h map[string]any) { h["cty"] = "JWT" }), pl), notAccess),
		refused("payload a nested JWT", f.sign(f.header(nil), strconv.Quote(good)), malformed),
		refused("JWE shape", seg[0]+".a.b.c.d", malformed),
		refused("ID token (at_hash)", f.sign(f.header(nil), f.payload(func(c map[string]any) { c["at_hash"] = "Zm9v" })), notAccess),

		refused("duplicate sub", replaced(`"sub":"`, `"sub":"admin","sub":"`), malformed),
		refused("duplicate sub, escaped name", replaced(`"sub":"`, `"s\u0075b":"admin","sub":"`), malformed),
		refused("duplicate tier claim", replaced(`"plan":"`, `"plan":"enterprise","plan":"`), malformed),
		refused("duplicate header alg", f.sign(`{"alg":"RS256","kid":"`+f.kid+`","alg":"none"}`, pl), malformed),

		refused("exp a string", replaced(exp, strings.Replace(exp, ":", `:"`, 1)+`"`), malformed),
		ok("exp a fraction", replaced(exp, exp+".5")),
		refused("exp 1e300", replaced(exp, `"exp":1e300`), malformed),
		ok("aud array with the audience", f.sign(f.header(nil), f.payload(func(c map[string]any) { c["aud"] = []string{"other", f.claims["aud"].([]string)[0]} }))),
		refused("aud array without the audience", f.sign(f.header(nil), f.payload(func(c map[string]any) {
			c["aud"] = []string{"other", f.claims["aud"].([]string)[0] + "/"}
		})), wrongAud),
		refused("iss of another issuer", f.sign(f.header(nil), f.payload(func(c map[string]any) { c["iss"] = attacker + "/" })), "Access token from an untrusted issuer"),
		{name: "plan naming no tier", token: f.sign(f.header(nil), f.payload(func(c map[string]any) { c["plan"] = "platinum" })),
			status: http.StatusForbidden, msg: "Access token names an unknown tier", challenge: "Access token names an unknown tier"},

		// cg_ makes it an API key, and not a well-formed one (docs/api.md
		// "Errors": a token that is not a well-formed key).
		{name: "cg_-prefixed JWT", token: "cg_" + good, status: http.StatusUnauthorized, msg: "Malformed authorization header", challenge: "-"},
	}
}

// tokForge signs tokens with the issuer's key, with fresh jti, iat and exp.
type tokForge struct {
	t      *testing.T
	key    *rsa.PrivateKey
	kid    string
	claims map[string]any
	mu     sync.Mutex
	n      int
}

func (f *tokForge) header(edit func(map[string]any)) string {
	h := map[string]any{"alg": "RS256", "typ": "JWT", "kid": f.kid}
	if edit != nil {
		edit(h)
	}
	return tokJSON(f.t, h)
}

// payload is the genuine claims (a jti of its own), edited.
func (f *tokForge) payload(edit func(map[string]any)) string {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	now := time.Now()
	c := map[string]any{"jti": "hostile-" + strconv.Itoa(n), "iat": now.Unix() - 5, "exp": float64(now.Add(10 * time.Minute).Unix())}
	for k, v := range f.claims { // read only: the flood's workers share it
		c[k] = v
	}
	if edit != nil {
		edit(c)
	}
	return tokJSON(f.t, c)
}

func (f *tokForge) sign(header, payload string) string {
	return testidp.SignRaw(header, payload, jwt.SigningMethodRS256, f.key)
}

// forged is the i-th distinct forgery: genuine header and claims, random
// signature bytes of the right length.
func (f *tokForge) forged(i int) string {
	sig := make([]byte, f.key.Size())
	_, _ = rand.Read(sig)
	pl := f.payload(func(c map[string]any) { c["jti"] = "flood-" + strconv.Itoa(i) })
	return b64([]byte(f.header(nil))) + "." + b64([]byte(pl)) + "." + b64(sig)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func tokJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tokIssuerKey reads the private half of the key Hydra signed issued with
// from its admin API (which answers with private keys), so the corpus can
// hold genuine signatures over any claims.
func tokIssuerKey(t *testing.T, idp *testhydra.Server, issued string) (string, *rsa.PrivateKey) {
	t.Helper()
	var hdr struct{ Kid string }
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(issued, ".")[0])
	if err != nil || json.Unmarshal(b, &hdr) != nil {
		t.Fatalf("Hydra's token header: %v", err)
	}
	resp, err := http.Get(idp.AdminURL() + "/admin/keys/" + testhydra.AccessTokenKeySet)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kid, Kty, N, E, D, P, Q string } `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	num := func(s string) *big.Int {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return new(big.Int).SetBytes(b)
	}
	for _, k := range set.Keys {
		if k.Kid != hdr.Kid || k.Kty != "RSA" || k.D == "" {
			continue
		}
		key := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: num(k.N), E: int(num(k.E).Int64())}, D: num(k.D), Primes: []*big.Int{num(k.P), num(k.Q)}}
		if err := key.Validate(); err != nil {
			t.Fatalf("Hydra's key %s: %v", k.Kid, err)
		}
		key.Precompute()
		return k.Kid, key
	}
	t.Fatalf("Hydra's admin API has no private RSA key %s", hdr.Kid)
	return "", nil
}

// tokGet is GET /bills?limit=1 with tok through client.
func tokGet(t *testing.T, client *http.Client, base, tok string) (int, string, http.Header) {
	st, body, hdr, err := doRequest(client, http.MethodGet, base+"/bills?limit=1", tok, "")
	if err != nil {
		t.Errorf("GET /bills: %v", err)
	}
	if st >= 500 {
		t.Errorf("GET /bills with a hostile token: %d %s", st, body)
	}
	return st, body, hdr
}

// tokNoEcho fails when an answer's body or a header value holds the token
// (or its last 20 characters).
func tokNoEcho(t *testing.T, name, tok, body string, hdr http.Header) {
	needles := []string{tok}
	if len(tok) > 20 {
		needles = append(needles, tok[len(tok)-20:])
	}
	for _, n := range needles {
		if strings.Contains(body, n) {
			t.Errorf("%s: the answer's body holds the token", name)
		}
		for k, vs := range hdr {
			for _, v := range vs {
				if strings.Contains(v, n) {
					t.Errorf("%s: the answer's %s holds the token", name, k)
				}
			}
		}
	}
}

// tokMetric is civicgate_auth_requests_total of one outcome.
func tokMetric(t *testing.T, s *stack.Stack, outcome string) float64 {
	t.Helper()
	ctx, cancel := contextWithTimeout(t, 10*time.Second)
	defer cancel()
	v, err := s.GatewayMetric(ctx, `civicgate_auth_requests_total{outcome="`+outcome+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tokLogHasNo fails when the gateway's log holds any of texts.
func tokLogHasNo(t *testing.T, s *stack.Stack, texts ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, "civicgate.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range texts {
		if strings.Contains(string(b), x) {
			t.Errorf("the gateway's log holds %q", x)
		}
	}
}

// tokHostileCaddyfile copies the shipped Caddyfiles with a jwt block for
// issuer and audience in civic_auth (failed_lookups 60/h: a burst of 60,
// then one a minute).
func tokHostileCaddyfile(t *testing.T, root, issuer, audience string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(root, "caddyfile", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped Caddyfiles: %v %v", files, err)
	}
	const anchor = "\t\tidentity_secret {env.CIVIC_IDENTITY_SECRET}\n\t\timport tiers.caddy\n"
	// failed_lookups refills one lookup a minute here (the default, 60/m,
	// refills one a second: a loaded machine's pause after the flood could
	// hand the "new genuine token" below a fresh lookup).
	block := anchor + "\t\tfailed_lookups 60/h\n\t\tjwt {\n\t\t\tissuer " + issuer + "\n\t\t\taudience " + audience +
		"\n\t\t\ttier_claim plan\n\t\t\torg_claim org_id\n\t\t}\n"
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "Caddyfile.local" {
			if strings.Count(string(b), anchor) != 1 {
				t.Fatalf("Caddyfile.local has no single %q", anchor)
			}
			b = []byte(strings.Replace(string(b), anchor, block, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "Caddyfile.local")
}
