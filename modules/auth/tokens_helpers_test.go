package auth

import (
	"crypto"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// The access-token path as Caddy runs it (tokens.go, tokenwatch.go,
// tokenorgs.go, jwt.go; docs/identity.md): a gateway provisioned from a
// Caddyfile whose civic_auth has a jwt block naming an identity provider
// served by internal/testkit/testidp (discovery and a JWKS over real HTTP), with the
// PostgreSQL key store, and tokens signed here with real RSA, EC and Ed25519
// keys. tokenProbe, a handler behind civic_auth, shows what the request
// value carries and opens credential watches the tests await.

// The IdP's signing keys, generated once per test binary (RSA is slow).
var (
	idpKeysOnce           sync.Once
	idpRSA                crypto.Signer
	idpRSAKey, idpECKey   testidp.Key
	idpEdKey, idpForgeKey testidp.Key
)

func idpKeys() {
	idpKeysOnce.Do(func() {
		idpRSA = testidp.MustSigner("RS256")
		idpRSAKey = testidp.Key{KID: "rsa-1", Alg: "RS256", Signer: idpRSA}
		idpECKey = testidp.Key{KID: "ec-1", Alg: "ES256", Signer: testidp.MustSigner("ES256")}
		idpEdKey = testidp.Key{KID: "ed-1", Alg: "EdDSA", Signer: testidp.MustSigner("EdDSA")}
		// the forger knows the published kid, not the key
		idpForgeKey = testidp.Key{KID: "rsa-1", Alg: "RS256", Signer: testidp.MustSigner("RS256")}
	})
}

// tokenIdP is the identity provider of the token tests (internal/testkit/testidp:
// discovery and a JWKS on 127.0.0.1) with the claims of a good token.
type tokenIdP struct{ *testidp.Server }

func newTokenIdP(t testing.TB, keys ...testidp.Key) *tokenIdP {
	t.Helper()
	idpKeys()
	return &tokenIdP{testidp.Start(t, keys...)}
}

// claims are a good token's claims: subject sub, tier plan and organization
// org (each left out when ""), valid for ttl from now.
func (p *tokenIdP) claims(sub, plan, org string, ttl time.Duration) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": p.Issuer(), "aud": tokenAudience, "iat": now.Unix(), "exp": now.Add(ttl).Unix(),
		"jti": "jti-" + testenv.RandomSuffix(6)}
	for name, v := range map[string]string{"sub": sub, "plan": plan, "org_id": org} {
		if v != "" {
			c[name] = v
		}
	}
	return c
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
`, adminPort, port, testenv.FreePort(t), g.logPath, g.upstream.srv.URL, c.authOptions, g.idp.Issuer(), tokenAudience, c.jwtOptions)
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
func (g *tokenGateway) token(k testidp.Key, sub, plan string, ttl time.Duration, extra map[string]any) string {
	c := g.idp.claims(sub, plan, g.acme.OrgID, ttl)
	for name, v := range extra {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	return testidp.Sign(k, c)
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
