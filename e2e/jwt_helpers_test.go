package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testhydra"
	"github.com/civicgate/civicgate/modules/contract"
)

// The gateway of the access-token tests (docs/identity.md): the shipped
// Caddyfile.local and routes with a jwt block naming a real ORY Hydra
// (internal/testkit/testhydra), the RFC 9728 metadata route, two tiers for tokens,
// and a second site in front of the example library engine for
// graphql-transport-ws subscriptions (recordsd serves queries only).

// Tiers the token tests add to tiers.caddy: jwtsmall's quota runs out in a
// test; jwtlib holds the library engine's families.
var jwtTiers = []string{
	"tier jwtsmall 10/m cost 50000/h bills members",
	"tier jwtlib 1000/m catalog loans",
}

// jwtClientSecret is every Hydra client's secret (not a credential of the
// gateway: it only asks Hydra for tokens).
const jwtClientSecret = "e2e-client-secret"

// jwtStack is one stack whose gateway admits Hydra's access tokens.
type jwtStack struct {
	s           *stack.Stack
	idp         *testhydra.Server
	audience    string // the gateway's own URL: the API the tokens are for
	metadataURL string // its RFC 9728 metadata, named in every challenge
	libWS       string // ws://…/graphql of the library site
	events      *library.LoanEvents
	identities  *identityRecorder // what recordsd received
	secrets     []string          // tokens seen, for the log check
}

// identityRecorder is a reverse proxy in front of recordsd keeping every
// X-Civic-Identity the gateway sent.
type identityRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *identityRecorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return ""
	}
	return r.seen[len(r.seen)-1]
}

// jwtGatewayEdits are the edits of Caddyfile.local: the jwt block (and a
// failed_lookups budget the refusal subtests cannot spend: the flood of
// forged tokens is reliability/tokens_hostile_test.go's), the metadata
// route on the API site, and the library site.
func jwtGatewayEdits(issuer, audience string, extra string) [][2]string {
	const authAnchor = "\t\tidentity_secret {env.CIVIC_IDENTITY_SECRET}\n\t\timport tiers.caddy\n"
	jwtBlock := "\t\tfailed_lookups 1000/m\n\t\tjwt {\n" +
		"\t\t\tissuer " + issuer + "\n" +
		"\t\t\taudience " + audience + "\n" +
		"\t\t\ttier_claim plan\n" +
		"\t\t\torg_claim org_id\n" +
		"\t\t\tdefault_tier free\n" +
		// the gateway fetches discovery and the key set as it starts; a
		// loaded machine has seen Hydra take over the default 10 s
		"\t\t\tfetch_timeout 50s\n" +
		extra +
		"\t\t}\n"
	const siteAnchor = "\ttls internal\n\tlog\n\timport routes.caddy\n"
	metadata := "\ttls internal\n\tlog\n\thandle /.well-known/oauth-protected-resource* {\n\t\tcivic_resource_metadata\n\t}\n\timport routes.caddy\n"
	const lastAnchor = "# Any other Host on this port: 421 JSON (misdirected.caddy).\n"
	return [][2]string{
		{authAnchor, authAnchor + jwtBlock},
		{siteAnchor, metadata},
		{lastAnchor, librarySite + lastAnchor},
	}
}

// librarySite is examples/other-backend/Caddyfile's guard on a plain-HTTP
// loopback site: queries, mutations and subscriptions of the library engine.
const librarySite = `http://127.0.0.1:{$JWT_LIBRARY_PORT} {
	bind 127.0.0.1
	log
	route /graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			schema {$JWT_LIBRARY_SCHEMA}
			limit_argument first
			max_depth 6
			operations query mutation subscription
			family catalog books book authors
			family loans loans Mutation.borrowBook Mutation.returnBook Subscription.loanEvents
			subscriptions {
				max_per_connection 10
				max_per_key 100
				init_timeout 10s
			}
		}
		reverse_proxy {$JWT_LIBRARY_UPSTREAM} {
			flush_interval -1
		}
	}
	handle_errors {
		header Content-Type application/json
		respond ` + "`" + `{"error":"{http.error.status_text}"}` + "`" + ` {http.error.status_code}
	}
}

`

// startJWTStack starts recordsd (behind an identity recorder), the library
// engine and the gateway with the jwt block for idp; extra is more lines of
// the jwt block.
func startJWTStack(t *testing.T, idp *testhydra.Server, extra string) *jwtStack {
	t.Helper()
	s := stack.New(t, &bins)
	s.Setenv("CIVICGATE_USAGE_FLUSH", "1s")
	// Every admitted request reaches recordsd, whose identity assertion
	// the tests read (a cached answer would not).
	s.Setenv("CIVICGATE_CACHE", "off")
	g := &jwtStack{s: s, idp: idp, audience: s.HTTPSURL, identities: &identityRecorder{}}
	g.metadataURL = g.audience + "/.well-known/oauth-protected-resource"

	backend, err := url.Parse("http://" + s.Getenv("RECORDSD_LISTEN"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.identities.mu.Lock()
		g.identities.seen = append(g.identities.seen, r.Header.Get(contract.IdentityHeader))
		g.identities.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	s.Setenv("CIVICGATE_UPSTREAM", strings.TrimPrefix(rec.URL, "http://"))

	g.events = library.NewLoanEvents()
	engine := library.NewHandler(library.NewCatalog(), g.events, library.Options{
		IdentitySecret: []byte(s.Getenv("CIVIC_IDENTITY_SECRET")),
		KeepAlive:      time.Hour, // no pings to answer while a test awaits a close
	})
	lib := httptest.NewServer(engine)
	t.Cleanup(lib.Close)
	libPort := testenv.FreePort(t)
	s.Setenv("JWT_LIBRARY_PORT", strconv.Itoa(libPort))
	s.Setenv("JWT_LIBRARY_SCHEMA", filepath.Join(s.Root, "examples", "other-backend", "library.graphqls"))
	s.Setenv("JWT_LIBRARY_UPSTREAM", strings.TrimPrefix(lib.URL, "http://"))
	g.libWS = "ws://127.0.0.1:" + strconv.Itoa(libPort) + "/graphql"

	s.Prepare()
	s.StartRecordsd()
	s.StartGateway(gatewayFiles(t, s.Root, jwtTiers, jwtGatewayEdits(idp.Issuer(), g.audience, extra)...))
	t.Cleanup(func() { s.CheckLogs(t, g.secrets...) })
	return g
}

// client registers a Hydra client that may ask for audiences (the
// gateway's when none) and whose tokens carry claims (plan, org_id).
func (g *jwtStack) client(t *testing.T, id string, claims map[string]any, audiences ...string) {
	t.Helper()
	if len(audiences) == 0 {
		audiences = []string{g.audience}
	}
	g.idp.CreateClient(t, id, jwtClientSecret, audiences, nil)
	if claims != nil {
		g.idp.SetClaims(t, id, claims)
	}
}

// token is a fresh client-credentials token of client id for the gateway.
func (g *jwtStack) token(t *testing.T, id string) string {
	t.Helper()
	tok := g.idp.Token(t, id, jwtClientSecret, []string{g.audience}, nil)
	g.secrets = append(g.secrets, tok)
	return tok
}

// keep remembers a token the test made itself for the log check.
func (g *jwtStack) keep(tok string) string {
	g.secrets = append(g.secrets, tok)
	return tok
}

// setLifespan sets the lifespan of client id's client-credentials access
// tokens (Hydra's PUT /admin/clients/{id}/lifespans): one client's tokens
// can expire in seconds while the others live for Hydra's hour.
func (g *jwtStack) setLifespan(t *testing.T, id string, d time.Duration) {
	t.Helper()
	body := `{"client_credentials_grant_access_token_lifespan":"` + strconv.Itoa(int(d/time.Second)) + `s"}`
	hydraAdmin(t, g.idp, http.MethodPut, "/admin/clients/"+id+"/lifespans", body, http.StatusOK)
}

// hydraAdmin sends one request to Hydra's admin API and wants status want;
// it returns the body (admin answers hold no token).
func hydraAdmin(t *testing.T, idp *testhydra.Server, method, path, body string, want int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, idp.AdminURL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("Hydra %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		t.Fatalf("Hydra %s %s: %d, want %d: %.300s", method, path, resp.StatusCode, want, b)
	}
	return b
}

// challenge is the WWW-Authenticate of a refusal with params (none: the
// challenge of a request without a credential).
func (g *jwtStack) challenge(params string) string {
	c := `Bearer realm="civicgate", resource_metadata="` + g.metadataURL + `"`
	if params != "" {
		c += ", " + params
	}
	return c
}

// invalidToken is the challenge of a 401 refusal described by desc.
func (g *jwtStack) invalidToken(desc string) string {
	return g.challenge(`error="invalid_token", error_description="` + desc + `"`)
}

// wantRefusal checks an answer's status, exact body {"error":msg} and
// exact WWW-Authenticate (challenge "" : none at all).
func wantRefusal(t *testing.T, what string, x exchange, status int, msg, challenge string) {
	t.Helper()
	want := `{"error":` + strconv.Quote(msg) + `}`
	got := x.header.Values("Www-Authenticate")
	switch {
	case x.status != status || x.body != want:
		t.Errorf("%s: %d %.200s, want %d %s", what, x.status, x.body, status, want)
	case challenge == "" && len(got) != 0:
		t.Errorf("%s: WWW-Authenticate %q, want none", what, got)
	case challenge != "" && (len(got) != 1 || got[0] != challenge):
		t.Errorf("%s: WWW-Authenticate %q\nwant %q", what, got, challenge)
	}
}

// getBills is GET /bills?limit=1 with tok (none when "").
func getBills(t *testing.T, s *stack.Stack, tok string) exchange {
	t.Helper()
	if tok == "" {
		resp, body := do(t, s, http.MethodGet, "/bills?limit=1", "", "", nil)
		return exchange{status: resp.StatusCode, body: body, header: resp.Header}
	}
	return send(t, s, http.MethodGet, "/bills?limit=1", tok, "")
}

// usageUnder is `civicgate keys usage --org org --json` per key id, or
// the command's error: an organization the key store does not know is
// found by its usage rows, so the command fails until the first flush.
func usageUnder(t *testing.T, s *stack.Stack, org string) (map[string]usageCounts, usageCounts, error) {
	t.Helper()
	out, err := s.RunErr(s.Bins.Civicgate, "keys", "usage", "--org", org, "--json")
	if err != nil {
		return nil, usageCounts{}, fmt.Errorf("keys usage --org %s: %w: %s", org, err, out)
	}
	per, totals := parseUsage(t, out)
	return per, totals, nil
}

// gatewayLogHas waits until the gateway's log holds a line containing
// every one of parts.
func gatewayLogHas(t *testing.T, s *stack.Stack, parts ...string) {
	t.Helper()
	stack.WaitFor(t, 20*time.Second, "a gateway log line with "+strings.Join(parts, ", "), func() error {
		b, err := os.ReadFile(filepath.Join(s.Dir, "civicgate.log"))
		if err != nil {
			return err
		}
	lines:
		for line := range strings.Lines(string(b)) {
			for _, p := range parts {
				if !strings.Contains(line, p) {
					continue lines
				}
			}
			return nil
		}
		return errors.New("no such line yet")
	})
}
