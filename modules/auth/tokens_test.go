package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/adapttest"
	"github.com/civicgate/civicgate/internal/testenv"
	"github.com/civicgate/civicgate/modules/auth/accesstoken"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// The access-token path as Caddy runs it (tokens.go, tokenwatch.go,
// tokenorgs.go, jwt.go; docs/identity.md): a gateway provisioned from a
// Caddyfile whose civic_auth has a jwt block naming an identity provider
// served by httptest (discovery and a JWKS over real HTTP), with the
// PostgreSQL key store, and tokens signed here with real RSA, EC and Ed25519
// keys. tokenProbe, a handler behind civic_auth, shows what the request
// value carries and opens credential watches the tests await.

// The IdP's signing keys, generated once per test binary (RSA is slow).
var (
	idpKeysOnce           sync.Once
	idpRSA, idpRSAForger  *rsa.PrivateKey
	idpEC                 *ecdsa.PrivateKey
	idpEd                 ed25519.PrivateKey
	idpRSAKey, idpECKey   idpKey
	idpEdKey, idpForgeKey idpKey
)

// idpKey is a private key the IdP publishes under kid, for alg.
type idpKey struct {
	kid, alg string
	key      crypto.Signer
}

func idpKeys() {
	idpKeysOnce.Do(func() {
		must := func(err error) {
			if err != nil {
				panic(err)
			}
		}
		var err error
		idpRSA, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		idpRSAForger, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		idpEC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		_, idpEd, err = ed25519.GenerateKey(rand.Reader)
		must(err)
		idpRSAKey = idpKey{"rsa-1", "RS256", idpRSA}
		idpECKey = idpKey{"ec-1", "ES256", idpEC}
		idpEdKey = idpKey{"ed-1", "EdDSA", idpEd}
		// the forger knows the published kid, not the key
		idpForgeKey = idpKey{"rsa-1", "RS256", idpRSAForger}
	})
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk is k's public key as the JWKS publishes it.
func (k idpKey) jwk() map[string]any {
	m := map[string]any{"kid": k.kid, "alg": k.alg, "use": "sig"}
	switch pub := k.key.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64url(pub.N.Bytes()), b64url(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		b, _ := pub.Bytes() // 0x04 || x || y
		size := (len(b) - 1) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", pub.Curve.Params().Name, b64url(b[1:1+size]), b64url(b[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64url(pub)
	}
	return m
}

// tokenIdP is an identity provider on 127.0.0.1: discovery at
// /.well-known/openid-configuration, the key set at /jwks.
type tokenIdP struct {
	srv    *httptest.Server
	issuer string
	mu     sync.Mutex
	keys   []idpKey
}

func newTokenIdP(t testing.TB, keys ...idpKey) *tokenIdP {
	t.Helper()
	idpKeys()
	p := &tokenIdP{keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.issuer, "jwks_uri": p.issuer + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		set := make([]map[string]any, 0, len(p.keys))
		for _, k := range p.keys {
			set = append(set, k.jwk())
		}
		p.mu.Unlock()
		w.Header().Set("Cache-Control", "max-age=600")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	})
	p.srv = httptest.NewServer(mux)
	p.issuer = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

func (p *tokenIdP) setKeys(keys ...idpKey) {
	p.mu.Lock()
	p.keys = keys
	p.mu.Unlock()
}

// claims are a good token's claims: subject sub, tier plan and organization
// org (each left out when ""), valid for ttl from now.
func (p *tokenIdP) claims(sub, plan, org string, ttl time.Duration) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": p.issuer, "aud": tokenAudience, "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
		"jti": "jti-" + testenv.RandomSuffix(6)}
	for name, v := range map[string]string{"sub": sub, "plan": plan, "org_id": org} {
		if v != "" {
			c[name] = v
		}
	}
	return c
}

// signToken signs claims with k under its kid and alg, typ at+jwt.
func signToken(k idpKey, claims map[string]any) string {
	return signTokenHeader(map[string]any{"alg": k.alg, "kid": k.kid, "typ": "at+jwt"}, k.key, claims)
}

// signTokenHeader signs claims under header with key, by header's alg
// ("none": no signature).
func signTokenHeader(header map[string]any, key any, claims map[string]any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := b64url(h) + "." + b64url(c)
	alg, _ := header["alg"].(string)
	if alg == "none" {
		return input + "."
	}
	sig, err := jwt.GetSigningMethod(alg).Sign(input, key)
	if err != nil {
		panic(err)
	}
	return input + "." + b64url(sig)
}

// The jwt block the gateway runs with: the audience is an https URL, so every
// 401 names the RFC 9728 metadata derived from it.
const (
	tokenAudience    = "https://api.civicgate.test/v1"
	tokenMetadataURL = "https://api.civicgate.test/.well-known/oauth-protected-resource/v1"
	tokenRealm       = `Bearer realm="civicgate", resource_metadata="` + tokenMetadataURL + `"`
)

// tokenGateway is a gateway with a jwt block, its IdP and its key store.
type tokenGateway struct {
	*gateway
	idp  *tokenIdP
	pool *pgxpool.Pool
	// acme is a key of the organization "acme"; tokens name its id in org_id.
	acme keystore.Issued
}

// tokenGatewayConfig is what tests vary: lines added to the civic_auth
// global option and to its jwt block.
type tokenGatewayConfig struct {
	authOptions, jwtOptions string
}

func startTokenGateway(t *testing.T, c tokenGatewayConfig) *tokenGateway {
	t.Helper()
	idpKeys()
	dsn, pool := migratedDB(t)
	g := &tokenGateway{idp: newTokenIdP(t, idpRSAKey, idpECKey, idpEdKey), pool: pool}
	g.acme = issue(t, pool, "acme", "enterprise", "live")
	t.Setenv("CIVIC_AUTH_TEST_DSN", dsn)
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	port := testenv.FreePort(t)
	g.gateway = &gateway{base: fmt.Sprintf("http://localhost:%d", port), logPath: filepath.Join(t.TempDir(), "caddy.log"), upstream: newRecorder(t)}
	g.accessLogPath = g.logPath
	cfg := fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	log {
		output file %[4]s
		level DEBUG
	}
	civic_auth {
		keys postgres {env.CIVIC_AUTH_TEST_DSN}
		environment live
		identity_secret {env.CIVIC_AUTH_TEST_SECRET}
		identity_ttl 30s
		cache_ttl 1m
		lookup_timeout 1s
		tier free 30/m bills members
		tier enterprise 1000/m 100000/d cost 500000/h bills members changes
		%[6]s
		jwt {
			issuer %[7]s
			audience %[8]s
			algorithms RS256 ES256 EdDSA
			tier_claim plan
			org_claim org_id
			require_scope changes changes:read
			%[9]s
		}
	}
}
http://localhost:%[2]d {
	log {
		output file %[4]s
	}
	handle /.well-known/oauth-protected-resource* {
		civic_resource_metadata {
			resource_name "Civic Records API"
		}
	}
	route /bills* {
		civic_auth {
			require_family bills
		}
		reverse_proxy %[5]s
	}
	route /changes* {
		civic_auth {
			require_family changes
		}
		respond "changes ok"
	}
	route /echo {
		civic_auth
		respond "{civic.key_id}|{civic.org}|{civic.tier}|{civic.env}|{civic.rate}|{civic.families}|{civic.cost_budget}"
	}
	route /probe {
		civic_auth
		civic_test_token_probe
	}
}
`, adminPort, port, testenv.FreePort(t), g.logPath, g.upstream.srv.URL, c.authOptions, g.idp.issuer, tokenAudience, c.jwtOptions)
	caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")
	return g
}

// app is the running civic_auth app.
func (g *tokenGateway) app(t *testing.T) *App {
	t.Helper()
	a, err := caddy.ActiveContext().App("civic_auth")
	if err != nil {
		t.Fatal(err)
	}
	return a.(*App)
}

// token signs a token of g's IdP for sub with tier plan in organization
// acme, valid for ttl, with extra claims set (nil values removed).
func (g *tokenGateway) token(k idpKey, sub, plan string, ttl time.Duration, extra map[string]any) string {
	c := g.idp.claims(sub, plan, g.acme.OrgID, ttl)
	for name, v := range extra {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	return signToken(k, c)
}

// expectTokenRefusal checks a refusal's status, body, Content-Type and
// WWW-Authenticate (challenge; "" for none).
func expectTokenRefusal(t *testing.T, got response, status int, body, challenge string) {
	t.Helper()
	if got.status != status || got.body != body {
		t.Fatalf("got %d %q, want %d %q", got.status, got.body, status, body)
	}
	if ct := got.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	wa := got.header.Values("Www-Authenticate")
	if challenge == "" && len(wa) != 0 || challenge != "" && (len(wa) != 1 || wa[0] != challenge) {
		t.Fatalf("WWW-Authenticate %q, want %q", wa, challenge)
	}
}

// tokenChallenge is the challenge of a token refusal.
func tokenChallenge(code, description string) string {
	return tokenRealm + `, error="` + code + `", error_description="` + description + `"`
}

// tokenProbe answers, as JSON, what civic_auth left for the handlers after
// it: the request value's caller, bearer and watcher, the placeholders and
// the headers. With X-Probe-Watch: <name> it opens a credential watch with
// the request's Watcher and keeps it under name (probeWatch).
type tokenProbe struct{}

var probeWatches sync.Map // name → contract.CredentialWatch

type probeAnswer struct {
	Caller        contract.Caller
	CallerIsToken bool // the caller is the resolved token's own
	Bearer        string
	Watcher       string
	Subject       string
	Expiry        int64
	Placeholders  map[string]string
	Authorization []string
	Identity      []string
}

func init() {
	caddy.RegisterModule(tokenProbe{})
	httpcaddyfile.RegisterHandlerDirective("civic_test_token_probe", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		h.Next()
		return new(tokenProbe), nil
	})
}

func (tokenProbe) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_test_token_probe", New: func() caddy.Module { return new(tokenProbe) }}
}

func (tokenProbe) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	q, ok := contract.RequestFrom(r.Context())
	if !ok {
		http.Error(w, "no request value", http.StatusInternalServerError)
		return nil
	}
	var out probeAnswer
	if c, ok := q.Caller(); ok {
		out.Caller = *c
		if rt, ok := q.Watcher().(*resolvedToken); ok {
			out.CallerIsToken, out.Subject, out.Expiry = c == &rt.caller, rt.id.Subject, rt.id.Expiry.Unix()
		}
	}
	out.Bearer, out.Watcher = q.Bearer(), fmt.Sprintf("%T", q.Watcher())
	out.Placeholders = map[string]string{}
	repl := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	for _, name := range []string{contract.CivicKeyID, contract.CivicOrg, contract.CivicTier, contract.CivicEnv, contract.CivicRate,
		contract.CivicFamilies, contract.CivicCostBudget} {
		out.Placeholders[name] = repl.ReplaceAll("{"+name+"}", "<unset>")
	}
	out.Authorization, out.Identity = r.Header.Values("Authorization"), r.Header.Values(contract.IdentityHeader)
	if name := r.Header.Get("X-Probe-Watch"); name != "" && q.Watcher() != nil {
		probeWatches.Store(name, q.Watcher().WatchCredential())
	}
	return json.NewEncoder(w).Encode(out)
}

// probe sends tok to /probe (opening a watch named watch unless "") and
// returns the answer.
func (g *tokenGateway) probe(t *testing.T, tok, watch string) probeAnswer {
	t.Helper()
	header := []string{"Authorization", "Bearer " + tok}
	if watch != "" {
		header = append(header, "X-Probe-Watch", watch)
	}
	got := get(t, g.base+"/probe", header...)
	if got.status != http.StatusOK {
		t.Fatalf("/probe: %d %q", got.status, got.body)
	}
	var out probeAnswer
	if err := json.Unmarshal([]byte(got.body), &out); err != nil {
		t.Fatalf("/probe: %v: %q", err, got.body)
	}
	return out
}

// probeWatch is the watch the probe opened under name (stopped at the end).
func probeWatch(t *testing.T, name string) contract.CredentialWatch {
	t.Helper()
	v, ok := probeWatches.LoadAndDelete(name)
	if !ok {
		t.Fatalf("the probe opened no watch %q", name)
	}
	w := v.(contract.CredentialWatch)
	t.Cleanup(w.Stop)
	return w
}

// provisionCaddyfile adapts a Caddyfile and provisions it as Caddy would load
// it (caddy.Validate: every app and handler provisioned, nothing started,
// then cleaned up): a configuration error surfaces here.
func provisionCaddyfile(t *testing.T, cfg string) error {
	t.Helper()
	js, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil)
	if err != nil {
		t.Fatalf("adapt: %v (%v)", err, warnings)
	}
	var c caddy.Config
	if err := json.Unmarshal(js, &c); err != nil {
		t.Fatal(err)
	}
	return caddy.Validate(&c)
}

// jwtCaddyfile is a minimal configuration with jwt block lines jwt (and no
// database: the pool connects lazily, provisioning never reaches it).
func jwtCaddyfile(jwt string) string {
	return `{
	admin off
	civic_auth {
		keys postgres postgres://nobody@127.0.0.1:1/none
		environment live
		identity_secret ` + testSecret + `
		tier free 30/m bills members
		tier enterprise 1000/m bills members changes
		jwt {
` + jwt + `
		}
	}
}
:0 {
	civic_auth
	respond ok
}
`
}

// awaitWatch waits for w to fire with reason want, within a ceiling generous
// enough for a loaded machine: the property is that it fires, with that
// reason.
func awaitWatch(t *testing.T, w contract.CredentialWatch, want string) {
	t.Helper()
	awaitFired(t, w, want, notifyWithin)
}

// TestTokenAdmitted: a token of the IdP, signed with each of the accepted
// algorithms, is served like a key — {civic.*} placeholders, the request
// value (caller, bearer, watcher), X-Civic-Identity upstream, no
// Authorization — with the tier its plan claim names and the tier's families
// less the require_scope families whose scope it lacks. API keys keep
// working beside tokens.
func TestTokenAdmitted(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	org := g.acme.OrgID
	for _, k := range []idpKey{idpRSAKey, idpECKey, idpEdKey} {
		t.Run(k.alg, func(t *testing.T) {
			sub := "auth0|user-" + k.kid
			tok := g.token(k, sub, "enterprise", time.Hour, nil)
			got := get(t, g.base+"/echo", "Authorization", "Bearer "+tok)
			if want := "jwt:sub:" + sub + "|" + org + "|enterprise|live|1000/m,100000/d|bills,members|500000/h"; got.status != 200 || got.body != want {
				t.Fatalf("placeholders: %d %q, want %q", got.status, got.body, want)
			}
		})
	}

	scoped := g.token(idpRSAKey, "auth0|scoped", "enterprise", time.Hour, map[string]any{"scope": "openid changes:read"})
	if got, want := get(t, g.base+"/echo", "Authorization", "Bearer "+scoped), "jwt:sub:auth0|scoped|"+org+"|enterprise|live|1000/m,100000/d|bills,members,changes|500000/h"; got.body != want {
		t.Fatalf("with the changes:read scope: %d %q, want %q", got.status, got.body, want)
	}
	if got := get(t, g.base+"/changes", "Authorization", "Bearer "+scoped); got.status != 200 || got.body != "changes ok" {
		t.Fatalf("require_family changes with the scope: %d %q", got.status, got.body)
	}
	free := g.token(idpRSAKey, "auth0|free", "free", time.Hour, map[string]any{"scope": "changes:read"})
	if got, want := get(t, g.base+"/echo", "Authorization", "Bearer "+free), "jwt:sub:auth0|free|"+org+"|free|live|30/m|bills,members|"; got.body != want {
		t.Fatalf("free tier: %d %q, want %q", got.status, got.body, want)
	}
	got := get(t, g.base+"/changes", "Authorization", "Bearer "+free)
	expectTokenRefusal(t, got, 403, `{"error":"Tier not entitled to this endpoint family"}`, "")
	if v := got.header.Values(contract.HeaderRefusedFamily); len(v) != 1 || v[0] != "changes" {
		t.Fatalf("%s %q", contract.HeaderRefusedFamily, v)
	}

	// A subject that would need escaping stands as a hash in the key id.
	odd := g.token(idpRSAKey, "user name/with spaces", "free", time.Hour, nil)
	sum := sha256Hex(g.idp.issuer + "\x00" + "user name/with spaces")
	if got := get(t, g.base+"/echo", "Authorization", "Bearer "+odd); !strings.HasPrefix(got.body, "jwt:hash:"+sum[:32]+"|") {
		t.Fatalf("key id of an unusual subject: %d %q", got.status, got.body)
	}

	t.Run("upstream", func(t *testing.T) {
		tok := g.token(idpRSAKey, "auth0|upstream", "enterprise", time.Hour, nil)
		forged, err := contract.SignIdentity([]byte(testSecret), contract.Caller{KeyID: "key_forged", Org: "evil", Tier: "enterprise", Env: "live"}, time.Now(), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := get(t, g.base+"/bills?q=x", "Authorization", "Bearer "+tok, "X-Civic-Identity", forged, "X-Civic-Tier", "enterprise", "X-Other", "kept")
		if got.status != 200 || got.body != "upstream ok" {
			t.Fatalf("%d %q", got.status, got.body)
		}
		up := g.upstream.last(t)
		if v := up.header.Values("Authorization"); len(v) != 0 {
			t.Fatalf("Authorization forwarded: %q", v)
		}
		for k := range up.header {
			if strings.HasPrefix(k, "X-Civic-") && k != contract.IdentityHeader {
				t.Fatalf("client header %s forwarded", k)
			}
		}
		if up.header.Get("X-Other") != "kept" {
			t.Fatal("unrelated header dropped")
		}
		ids := up.header.Values(contract.IdentityHeader)
		if len(ids) != 1 || ids[0] == forged {
			t.Fatalf("identity header %q", ids)
		}
		claims, err := contract.VerifyIdentity([]byte(testSecret), ids[0], time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if claims.KeyID() != "jwt:sub:auth0|upstream" || claims.Org != org || claims.Tier != "enterprise" || claims.Env != "live" ||
			strings.Join(claims.Families, ",") != "bills,members" {
			t.Fatalf("claims %+v", claims)
		}
		sig := tok[strings.LastIndexByte(tok, '.')+1:]
		if strings.Contains(g.upstream.all(), sig) {
			t.Fatal("the token reached the upstream")
		}
		logs, err := os.ReadFile(g.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(logs), "/bills") {
			t.Fatalf("log capture is not working (no access log line):\n%s", logs)
		}
		if strings.Contains(string(logs), sig) {
			t.Fatal("the token appears in the logs")
		}
	})

	t.Run("request value", func(t *testing.T) {
		tok := g.token(idpECKey, "auth0|probe", "enterprise", time.Hour, map[string]any{"scope": "changes:read"})
		exp := time.Now().Add(time.Hour).Unix()
		a := g.probe(t, tok, "")
		want := contract.Caller{KeyID: "jwt:sub:auth0|probe", Org: org, Tier: "enterprise", Env: "live", Families: []string{"bills", "members", "changes"}}
		if fmt.Sprint(a.Caller) != fmt.Sprint(want) || !a.CallerIsToken {
			t.Fatalf("caller %+v (the token's own: %v), want %+v", a.Caller, a.CallerIsToken, want)
		}
		if a.Bearer != tok || a.Watcher != "*auth.resolvedToken" || a.Subject != "auth0|probe" || a.Expiry < exp-5 || a.Expiry > exp {
			t.Fatalf("bearer is the token: %v, watcher %s, subject %q, expiry %d (want ≈ %d)", a.Bearer == tok, a.Watcher, a.Subject, a.Expiry, exp)
		}
		for name, v := range map[string]string{contract.CivicKeyID: want.KeyID, contract.CivicOrg: org, contract.CivicTier: "enterprise",
			contract.CivicEnv: "live", contract.CivicRate: "1000/m,100000/d", contract.CivicFamilies: "bills,members,changes",
			contract.CivicCostBudget: "500000/h"} {
			if a.Placeholders[name] != v {
				t.Errorf("{%s} = %q, want %q", name, a.Placeholders[name], v)
			}
		}
		if len(a.Authorization) != 0 || len(a.Identity) != 1 {
			t.Fatalf("Authorization %q, X-Civic-Identity %q", a.Authorization, a.Identity)
		}
		if _, err := contract.VerifyIdentity([]byte(testSecret), a.Identity[0], time.Now()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("keys beside tokens", func(t *testing.T) {
		if got := get(t, g.base+"/bills", "Authorization", "Bearer "+g.acme.Key); got.status != 200 {
			t.Fatalf("API key: %d %q", got.status, got.body)
		}
		unknown, err := keystore.NewKey("live")
		if err != nil {
			t.Fatal(err)
		}
		expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+unknown), 401, `{"error":"Invalid API key"}`, tokenRealm)
		expectTokenRefusal(t, get(t, g.base+"/bills"), 401, `{"error":"Missing bearer token"}`, tokenRealm)
		expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Basic abc"), 401, `{"error":"Malformed authorization header"}`, tokenRealm)
	})
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestTokenRefusals: each kind of refusal answers its status, its fixed body
// and an RFC 6750 challenge naming the RFC 9728 metadata; none reaches the
// upstream.
func TestTokenRefusals(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	now := time.Now()
	claims := func(set map[string]any) map[string]any {
		c := g.idp.claims("auth0|user-1", "enterprise", g.acme.OrgID, time.Hour)
		for k, v := range set {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	pub, err := x509.MarshalPKIXPublicKey(idpRSA.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	const invalid, scope = "invalid_token", "insufficient_scope"
	for _, c := range []struct {
		name         string
		tok          string
		status       int
		code, reason string
	}{
		{"malformed", "abc.def.ghi", 401, invalid, "Malformed access token"},
		{"too large", signToken(idpRSAKey, claims(map[string]any{"pad": strings.Repeat("x", 9000)})), 401, invalid, "Access token too large"},
		{"alg none", signTokenHeader(map[string]any{"alg": "none", "kid": "rsa-1", "typ": "at+jwt"}, nil, claims(nil)), 401, invalid, "Access token signing algorithm not accepted"},
		{"HS256 keyed with the public key", signTokenHeader(map[string]any{"alg": "HS256", "kid": "rsa-1", "typ": "at+jwt"}, pubPEM, claims(nil)), 401, invalid, "Access token signing algorithm not accepted"},
		{"algorithm not listed", signTokenHeader(map[string]any{"alg": "PS256", "kid": "rsa-1", "typ": "at+jwt"}, idpRSA, claims(nil)), 401, invalid, "Access token signing algorithm not accepted"},
		{"unknown kid", signToken(idpKey{"rsa-unknown", "RS256", idpRSA}, claims(nil)), 401, invalid, "Access token signed by an unknown key"},
		{"forged signature", signToken(idpForgeKey, claims(nil)), 401, invalid, "Invalid access token signature"},
		{"wrong issuer", signToken(idpRSAKey, claims(map[string]any{"iss": "https://evil.example"})), 401, invalid, "Access token from an untrusted issuer"},
		{"wrong audience", signToken(idpRSAKey, claims(map[string]any{"aud": "https://other.example"})), 401, invalid, "Access token not issued for this API"},
		{"expired", signToken(idpRSAKey, claims(map[string]any{"exp": now.Add(-time.Hour).Unix(), "iat": now.Add(-2 * time.Hour).Unix()})), 401, invalid, "Access token expired"},
		{"not yet valid", signToken(idpRSAKey, claims(map[string]any{"nbf": now.Add(time.Hour).Unix()})), 401, invalid, "Access token not yet valid"},
		{"ID token", signToken(idpRSAKey, claims(map[string]any{"at_hash": "Zm9v"})), 401, invalid, "Token is not an access token"},
		{"no subject", signToken(idpRSAKey, claims(map[string]any{"sub": nil})), 401, invalid, "Access token lacks a required claim"},
		{"no organization", signToken(idpRSAKey, claims(map[string]any{"org_id": nil})), 401, invalid, "Access token lacks a required claim"},
		{"no tier", signToken(idpRSAKey, claims(map[string]any{"plan": nil})), 403, scope, "Access token grants no tier"},
		{"unknown tier", signToken(idpRSAKey, claims(map[string]any{"plan": "gold"})), 403, scope, "Access token names an unknown tier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 2 { // the second answer may come from a cache: the same
				got := get(t, g.base+"/bills", "Authorization", "Bearer "+c.tok)
				expectTokenRefusal(t, got, c.status, `{"error":"`+c.reason+`"}`, tokenChallenge(c.code, c.reason))
			}
		})
	}
	if all := g.upstream.all(); all != "" {
		t.Fatalf("refused requests reached the upstream:\n%s", all)
	}
}

// TestTokenDenied: a denial of the token's subject (or its jti) refuses it
// with 401 "Access token denied" and closes the streams it opened; other
// subjects are untouched; an undenial admits it again.
func TestTokenDenied(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	awaitListening(t, g.app(t))
	ctx := context.Background()
	tok := g.token(idpRSAKey, "auth0|denied", "enterprise", time.Hour, nil)
	other := g.token(idpRSAKey, "auth0|other", "enterprise", time.Hour, nil)
	g.probe(t, tok, "denied")
	g.probe(t, other, "other")
	w, wo := probeWatch(t, "denied"), probeWatch(t, "other")
	expectOpen(t, w)

	if _, err := keystore.DenyToken(ctx, g.pool, keystore.Denial{Kind: keystore.DenySub, Issuer: g.idp.issuer, Value: "auth0|denied", Reason: "test"}, "test"); err != nil {
		t.Fatal(err)
	}
	awaitWatch(t, w, "Access token denied")
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Access token denied"}`,
		tokenChallenge("invalid_token", "Access token denied"))
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+other); got.status != 200 {
		t.Fatalf("another subject: %d %q", got.status, got.body)
	}
	expectOpen(t, wo)

	// a jti, of any issuer
	byJTI := g.token(idpEdKey, "auth0|other", "enterprise", time.Hour, map[string]any{"jti": "deny-this-one"})
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+byJTI); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	if _, err := keystore.DenyToken(ctx, g.pool, keystore.Denial{Kind: keystore.DenyJTI, Value: "deny-this-one", Reason: "leaked"}, "test"); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", byJTI, `{"error":"Access token denied"}`, notifyWithin)
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+other); got.status != 200 {
		t.Fatalf("the subject's other token: %d %q", got.status, got.body)
	}

	if _, err := keystore.UndenyToken(ctx, g.pool, keystore.DenySub, g.idp.issuer, "auth0|denied", "test"); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", tok, "upstream ok", notifyWithin)
}

// TestTokenOrgSuspended: suspending the organization a token's org claim
// names (`civicgate keys org suspend`) refuses its tokens with 403 and closes
// their streams; an organization the store does not know is active.
func TestTokenOrgSuspended(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	awaitListening(t, g.app(t))
	ctx := context.Background()
	tok := g.token(idpRSAKey, "auth0|member", "enterprise", time.Hour, nil)
	g.probe(t, tok, "member")
	w := probeWatch(t, "member")
	stranger := signToken(idpRSAKey, g.idp.claims("auth0|stranger", "free", "org_not_in_the_store", time.Hour))
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+stranger); got.status != 200 {
		t.Fatalf("an organization the store does not know: %d %q", got.status, got.body)
	}
	// The claim may name the organization by its name: the token is then the
	// store's organization (its id in {civic.org} and the caller), suspended with it.
	byName := signToken(idpRSAKey, g.idp.claims("auth0|by-name", "enterprise", "acme", time.Hour))
	if p := g.probe(t, byName, ""); p.Caller.Org != g.acme.OrgID || p.Placeholders["civic.org"] != g.acme.OrgID {
		t.Fatalf("org claim %q: caller org %q, {civic.org} %q, want the store's id %q", "acme", p.Caller.Org, p.Placeholders["civic.org"], g.acme.OrgID)
	}

	if err := keystore.SetOrgStatus(ctx, g.pool, "acme", keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	awaitWatch(t, w, contract.MsgOrgSuspended)
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 403, `{"error":"Organization suspended"}`, "")
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+byName), 403, `{"error":"Organization suspended"}`, "")
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+stranger); got.status != 200 {
		t.Fatalf("another organization: %d %q", got.status, got.body)
	}
	if err := keystore.SetOrgStatus(ctx, g.pool, "acme", keystore.OrgActive); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, g.base+"/bills", tok, "upstream ok", notifyWithin)
}

// TestTokenWatchExpires: a stream opened with a token closes at its exp with
// "token expired" (not before), and the token is then refused.
func TestTokenWatchExpires(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{jwtOptions: "leeway 1s"})
	c := g.idp.claims("auth0|short", "enterprise", g.acme.OrgID, 3*time.Second)
	exp := time.Unix(c["exp"].(int64), 0)
	tok := signToken(idpEdKey, c)
	g.probe(t, tok, "short")
	w := probeWatch(t, "short")
	awaitWatch(t, w, "token expired")
	if now := time.Now(); now.Before(exp) {
		t.Fatalf("fired %s before exp", exp.Sub(now))
	}
	awaitBody(t, g.base+"/bills", tok, `{"error":"Access token expired"}`, notifyWithin)
}

// TestTokenFailedLookups: forged tokens count against the client's
// failed_lookups budget like unknown keys; past it, every token not already
// resolved gets 429 before any signature is checked, while a resolved one
// keeps working. Genuine tokens are refunded.
func TestTokenFailedLookups(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{authOptions: "failed_lookups 3/m"})
	known := g.token(idpRSAKey, "auth0|known", "enterprise", time.Hour, nil)
	for i := range 5 { // first sights, all genuine: refunded
		tok := known
		if i > 0 {
			tok = g.token(idpRSAKey, fmt.Sprintf("auth0|genuine-%d", i), "free", time.Hour, nil)
		}
		if got := get(t, g.base+"/bills", "Authorization", "Bearer "+tok); got.status != 200 {
			t.Fatalf("genuine token %d: %d %q", i, got.status, got.body)
		}
	}
	forged := signToken(idpForgeKey, g.idp.claims("auth0|known", "enterprise", g.acme.OrgID, time.Hour))
	for range 3 {
		expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+forged), 401, `{"error":"Invalid access token signature"}`,
			tokenChallenge("invalid_token", "Invalid access token signature"))
	}
	for _, tok := range []string{forged, g.token(idpRSAKey, "auth0|new", "free", time.Hour, nil)} {
		got := get(t, g.base+"/bills", "Authorization", "Bearer "+tok)
		expectTokenRefusal(t, got, 429, `{"error":"Rate limit exceeded"}`, "")
		if ra := got.header.Get("Retry-After"); ra != "20" {
			t.Fatalf("Retry-After %q, want 20 (3/m: one every 20 s)", ra)
		}
	}
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+known); got.status != 200 {
		t.Fatalf("a token resolved before the flood: %d %q", got.status, got.body)
	}
	if n := g.app(t).tokens.verifier.Stats().Refused[accesstoken.BadSignature]; n != 3 {
		t.Fatalf("%d signatures checked and refused, want 3 (the throttled never verified)", n)
	}
}

// TestTokenCaddyfileErrors: a malformed jwt block is refused by the adapter,
// naming the option.
func TestTokenCaddyfileErrors(t *testing.T) {
	jwtBlock := func(lines string) string {
		return global("jwt {\nissuer https://idp.example.com/\naudience https://api.example.com\n" + lines + "\n}")
	}
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"jwt unknown option":   {jwtBlock("issuerr x"), `unknown option "issuerr"`},
		"jwt given twice":      {global("jwt {\nissuer https://a\n}\njwt {\nissuer https://b\n}"), "civic_auth: jwt given twice"},
		"jwt argument":         {global("jwt extra {\nissuer https://a\n}"), "wrong argument count or unexpected line ending after 'extra'"},
		"issuer twice":         {jwtBlock("issuer https://other.example.com/"), "issuer given twice"},
		"scope_tier one value": {jwtBlock("scope_tier api:read"), "wrong argument count or unexpected line ending after 'api:read'"},
		"leeway over 5m":       {jwtBlock("leeway 6m"), `jwt: leeway: "6m": want a duration from 0 to 5m0s`},
		"leeway negative":      {jwtBlock("leeway -1s"), `jwt: leeway: "-1s": want a duration from 0 to 5m0s`},
		"max_token_size small": {jwtBlock("max_token_size 100"), `max_token_size: want`},
		"jwks_cache_min zero":  {jwtBlock("jwks_cache_min 0s"), `jwks_cache_min: want a duration above zero, got "0s"`},
		"cache_size zero":      {jwtBlock("cache_size 0"), `cache_size: want a positive integer, got "0"`},
	})
	adapttest.Adapts(t, jwtBlock("scope_tier api:read free\nrequire_scope changes changes:read\nleeway 0s\nmax_token_size 16384"))
}

// TestTokenProvisionErrors: a jwt block the adapter accepts but the verifier
// cannot run with is a provision error, naming the option, the value or the
// URL that failed.
func TestTokenProvisionErrors(t *testing.T) {
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	good := "issuer " + p.issuer + "\naudience " + tokenAudience + "\ntier_claim plan\n"
	if err := provisionCaddyfile(t, jwtCaddyfile(good)); err != nil {
		t.Fatalf("the control configuration: %v", err)
	}
	dead := "http://127.0.0.1:" + fmt.Sprint(testenv.FreePort(t))
	for name, c := range map[string]struct{ jwt, want string }{
		"HS256":                    {good + "algorithms RS256 HS256", `algorithms: "HS256" is symmetric`},
		"none":                     {good + "algorithms none", `algorithms: "none": unsigned tokens are never accepted`},
		"missing issuer":           {"audience " + tokenAudience + "\ntier_claim plan", "issuer: required"},
		"missing audience":         {"issuer " + p.issuer + "\ntier_claim plan", "audience: required"},
		"unknown default_tier":     {good + "default_tier gold", `default_tier: unknown tier "gold" (tiers: enterprise, free)`},
		"unknown scope_tier tier":  {"issuer " + p.issuer + "\naudience a\nscope_tier api:gold gold", `scope_tier: scope "api:gold": unknown tier "gold"`},
		"tier_claim and scope":     {good + "scope_tier api:read free", "give tier_claim or scope_tier lines, not both"},
		"no tier source":           {"issuer " + p.issuer + "\naudience a", "default_tier: required without tier_claim or scope_tier"},
		"bad require_scope family": {good + "require_scope Bills bills:read", `civic_auth: jwt require_scope: bad family "Bills"`},
		"require_scope twice":      {good + "require_scope bills a\nrequire_scope bills b", `require_scope: family "bills" given twice`},
		"issuer over plain http":   {"issuer http://idp.example.com\naudience a\ntier_claim plan", "issuer: "},
		"JWKS unreachable":         {good + "jwks_url " + dead + "/jwks", dead + "/jwks"},
		"discovery unreachable":    {"issuer " + dead + "\naudience a\ntier_claim plan", dead},
	} {
		t.Run(name, func(t *testing.T) {
			err := provisionCaddyfile(t, jwtCaddyfile(c.jwt))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestTokenRequireFamilyLacksScope: require_family on a family whose
// require_scope scope the token lacks answers docs/identity.md's
// insufficient_scope refusal — its body, and a challenge naming the scope
// the client must ask for (RFC 6750 §3.1) — and names the family (D41).
func TestTokenRequireFamilyLacksScope(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	tok := g.token(idpRSAKey, "auth0|unscoped", "enterprise", time.Hour, map[string]any{"scope": "openid"})
	const reason = "Access token lacks the scope this endpoint family requires"
	got := get(t, g.base+"/changes", "Authorization", "Bearer "+tok)
	expectTokenRefusal(t, got, 403, `{"error":"`+reason+`"}`, tokenChallenge("insufficient_scope", reason)+`, scope="changes:read"`)
	if v := got.header.Values(contract.HeaderRefusedFamily); len(v) != 1 || v[0] != "changes" {
		t.Fatalf("%s %q", contract.HeaderRefusedFamily, v)
	}
}

// TestTokenOfWithdrawnKeyRefused: once a key set refresh no longer lists the
// key a token was signed with, the token is refused — also one the gateway
// resolved before (docs/identity.md "How a token is checked": a cached
// answer holds while "its key the issuer still publishes").
func TestTokenOfWithdrawnKeyRefused(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	tok := g.token(idpECKey, "auth0|withdrawn", "enterprise", time.Hour, nil)
	if got := get(t, g.base+"/bills", "Authorization", "Bearer "+tok); got.status != 200 {
		t.Fatalf("%d %q", got.status, got.body)
	}
	g.idp.setKeys(idpRSAKey, idpEdKey)
	v := g.app(t).tokens.verifier
	// An unknown kid refreshes the set, at most once per 10 s.
	testenv.EventuallyTrue(t, notifyWithin, "a key set refresh", func() bool {
		get(t, g.base+"/bills", "Authorization", "Bearer "+g.token(idpKey{"rsa-next", "RS256", idpRSA}, "auth0|x", "free", time.Hour, nil))
		return v.Stats().KeySetRefreshes >= 2
	})
	if _, err := v.Verify(context.Background(), tok); err == nil || err.(*accesstoken.Error).Kind != accesstoken.UnknownKey {
		t.Fatalf("the verifier: %v, want unknown_key", err)
	}
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Access token signed by an unknown key"}`,
		tokenChallenge("invalid_token", "Access token signed by an unknown key"))
}

// TestTokenWithoutJWTBlock: a gateway without a jwt block answers a JWT as it
// always did — not the shape of a key: a malformed header (docs/identity.md
// "In the gateway").
func TestTokenWithoutJWTBlock(t *testing.T) {
	dsn, _ := migratedDB(t)
	g := startGateway(t, dsn, "1s")
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	tok := signToken(idpRSAKey, p.claims("auth0|user-1", "free", "", time.Hour))
	expectRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Malformed authorization header"}`)
}

// TestTokenLeewayZero: `leeway 0` means no leeway (docs/identity.md
// "Options"), not the 30 s default: a token expired 5 s ago is refused.
func TestTokenLeewayZero(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{jwtOptions: "leeway 0s"})
	now := time.Now()
	tok := g.token(idpRSAKey, "auth0|late", "enterprise", time.Hour, map[string]any{"exp": now.Add(-5 * time.Second).Unix(), "iat": now.Add(-time.Minute).Unix()})
	expectTokenRefusal(t, get(t, g.base+"/bills", "Authorization", "Bearer "+tok), 401, `{"error":"Access token expired"}`,
		tokenChallenge("invalid_token", "Access token expired"))
}

// TestTokenJWKSCacheMinShort: jwks_cache_min below the 10 s refresh interval
// provisions (the interval is at most jwks_cache_min, docs/identity.md), and
// no error names jwks_refresh_min_interval, which no Caddyfile can set.
func TestTokenJWKSCacheMinShort(t *testing.T) {
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	err := provisionCaddyfile(t, jwtCaddyfile("issuer "+p.issuer+"\naudience a\ntier_claim plan\njwks_cache_min 5s"))
	if err != nil {
		t.Fatalf("jwks_cache_min 5s: %v", err)
	}
}

// TestTokenProvisionErrorSaysJWTOnce: a provision error of the jwt block
// reads "civic_auth: jwt: <option>: …", not "jwt: jwt:".
func TestTokenProvisionErrorSaysJWTOnce(t *testing.T) {
	err := provisionCaddyfile(t, jwtCaddyfile("audience a\ntier_claim plan"))
	if err == nil || !strings.Contains(err.Error(), "civic_auth: jwt: issuer: required") {
		t.Fatalf("error %v, want one containing %q", err, "civic_auth: jwt: issuer: required")
	}
}

// TestTokenBearerGoesToTheTokenPath: with a jwt block, a bearer value
// without the cg_ prefix is an access token (docs/caddyfile.md): a genuine
// one is admitted, a forged one refused as a token — not as a malformed
// Authorization header, which is what an API key of the wrong shape gets.
func TestTokenBearerGoesToTheTokenPath(t *testing.T) {
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	h := &Handler{app: tokenApp(t, p, 0), logger: zap.NewNop()}
	serve := func(tok string) (*httptest.ResponseRecorder, bool) {
		r := httptest.NewRequest(http.MethodGet, "/bills", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		admitted := false
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, r, nextFunc(func(http.ResponseWriter, *http.Request) error { admitted = true; return nil })); err != nil {
			t.Fatal(err)
		}
		return rec, admitted
	}
	if rec, ok := serve(benchToken(p, idpRSAKey, "auth0|unit")); !ok {
		t.Fatalf("a genuine token: %d %q", rec.Code, rec.Body.String())
	}
	rec, ok := serve(benchToken(p, idpForgeKey, "auth0|unit"))
	if ok || rec.Code != 401 || rec.Body.String() != `{"error":"Invalid access token signature"}` {
		t.Fatalf("a forged token: admitted %v, %d %q", ok, rec.Code, rec.Body.String())
	}
	if rec, _ := serve("cg_live_short"); rec.Body.String() != `{"error":"Malformed authorization header"}` {
		t.Fatalf("a malformed API key: %d %q", rec.Code, rec.Body.String())
	}
}

// TestTokenWatchPastExp: a watch opened on a token already past its exp
// (admitted within the leeway) fires at once with "token expired" — its
// timer's function may run before WatchCredential returns (go test -race).
func TestTokenWatchPastExp(t *testing.T) {
	idpKeys()
	a := tokenApp(t, newTokenIdP(t, idpRSAKey), 0)
	rt := a.tokens.newResolvedToken(accesstoken.Identity{Subject: "auth0|late", Organization: "org_x", Tier: "enterprise",
		Expiry: time.Now().Add(-time.Second), Issuer: "https://idp.example", KeyID: "jwt:sub:auth0|late"}, "org_x")
	for range 5000 {
		w := rt.WatchCredential()
		select {
		case <-w.Done():
		case <-time.After(notifyWithin):
			t.Fatal("the watch of an expired token did not fire")
		}
		if w.Reason() != "token expired" {
			t.Fatalf("Reason %q", w.Reason())
		}
	}
}
