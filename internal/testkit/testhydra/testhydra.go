// Package testhydra runs a real OAuth 2.0 / OpenID Connect server inside a
// test: ORY Hydra v2, built from the tool module tools/hydra (see Binary),
// serving on two loopback ports, public (token endpoint, discovery, JWKS) and
// admin (clients, keys, health).
//
// Hydra issues JWT access tokens (strategies.access_token=jwt) signed with
// the keys of its "hydra.jwt.access-token" set, whose public halves it
// publishes at JWKSURL. Custom claims such as plan or org_id reach a
// client-credentials token through Hydra's token hook (oauth2.token_hook):
// Hydra posts every token request to a small HTTP server in the test process,
// which answers with the claims set for the client by SetClaims; Hydra puts
// the claims named in oauth2.allowed_top_level_claims (Options.TopLevelClaims)
// at the top level of the token. A client's metadata never reaches its
// tokens, and the consent flow that can add claims has no place in the
// client-credentials grant, so the hook is the way.
//
// State (clients, signing keys, the system secret) lives in a SQLite file of
// the test's temporary directory rather than in Hydra's DSN=memory, so that
// Stop and Restart model an outage of the same identity provider: after
// Restart it serves the same issuer, clients and keys.
//
// Tests that use it need no service but take seconds and build Hydra once
// (minutes, cold): Start skips under -short like every testenv helper.
package testhydra

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// AccessTokenKeySet is the Hydra key set that signs JWT access tokens.
const AccessTokenKeySet = "hydra.jwt.access-token"

// DefaultTopLevelClaims are the custom claims put at the top level of access
// tokens when Options.TopLevelClaims is nil.
var DefaultTopLevelClaims = []string{"plan", "org_id"}

// reservedClaims are claims Hydra sets itself and a hook cannot replace
// (oauth2.Session.GetJWTClaims in Hydra).
var reservedClaims = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "scp", "ext"}

// Options configure a server. The zero value is Hydra's defaults plus the
// DefaultTopLevelClaims.
type Options struct {
	// AccessTokenLifespan is ttl.access_token; zero keeps Hydra's 1h.
	AccessTokenLifespan time.Duration
	// TopLevelClaims are the custom claim names that a token carries at
	// its top level (oauth2.allowed_top_level_claims); nil means
	// DefaultTopLevelClaims.
	TopLevelClaims []string
	// Ext also mirrors every custom claim under the "ext" claim, Hydra's
	// default (oauth2.mirror_top_level_claims). Off, a token carries its
	// custom claims only at the top level, as most identity providers do.
	Ext bool
	// ScopeClaim is strategies.jwt.scope_claim: "list" (Hydra's default,
	// an "scp" array), "string" (a space-separated "scope", RFC 9068) or
	// "both". Empty keeps Hydra's default.
	ScopeClaim string
}

// Server is a running Hydra.
type Server struct {
	opts       Options
	bin        string
	dir        string
	config     string
	publicPort int
	adminPort  int
	client     *http.Client

	hook    *httptest.Server
	hookKey string

	mu     sync.Mutex
	claims map[string]map[string]any // by client id, for the token hook
	proc   *process
	starts int
}

// Start builds Hydra if needed (Binary), starts it on two free loopback
// ports with a fresh SQLite database, waits until it is ready and stops it
// when the test ends. It skips the test under -short.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	testenv.NeedsServices(t)
	if opts.TopLevelClaims == nil {
		opts.TopLevelClaims = DefaultTopLevelClaims
	}
	for _, c := range opts.TopLevelClaims {
		if slices.Contains(reservedClaims, c) {
			t.Fatalf("testhydra: %q is a claim Hydra sets itself, not a custom claim", c)
		}
	}
	s := &Server{
		opts:       opts,
		bin:        Binary(t),
		dir:        t.TempDir(),
		publicPort: testenv.FreePort(t),
		adminPort:  testenv.FreePort(t),
		client:     &http.Client{Timeout: 30 * time.Second},
		hookKey:    randomHex(t, 24),
		claims:     map[string]map[string]any{},
	}
	s.hook = httptest.NewServer(http.HandlerFunc(s.serveTokenHook))
	t.Cleanup(s.hook.Close)
	s.config = filepath.Join(s.dir, "hydra.json")
	if err := s.writeConfig(t); err != nil {
		t.Fatalf("testhydra: %v", err)
	}
	s.migrate(t)
	// Registered before the first start, so that a Hydra that never gets
	// ready is stopped too.
	t.Cleanup(func() {
		s.mu.Lock()
		p := s.proc
		s.proc = nil
		s.mu.Unlock()
		if p != nil {
			p.stop()
		}
	})
	s.start(t)
	return s
}

// Issuer is the issuer URL, http://127.0.0.1:PORT/ with the trailing slash:
// the iss claim of every token and the issuer of discovery, byte for byte.
func (s *Server) Issuer() string { return "http://127.0.0.1:" + strconv.Itoa(s.publicPort) + "/" }

// JWKSURL is where the public keys of the ID token and access token sets are
// published.
func (s *Server) JWKSURL() string { return s.Issuer() + ".well-known/jwks.json" }

// DiscoveryURL is the OpenID Connect discovery document's URL.
func (s *Server) DiscoveryURL() string { return s.Issuer() + ".well-known/openid-configuration" }

// TokenURL is the token endpoint.
func (s *Server) TokenURL() string { return s.Issuer() + "oauth2/token" }

// AdminURL is the admin API's base URL, without a trailing slash.
func (s *Server) AdminURL() string { return "http://127.0.0.1:" + strconv.Itoa(s.adminPort) }

// Stop stops Hydra (SIGTERM, then SIGKILL after 10 s) and waits until it is
// gone: its ports refuse connections until Restart.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		t.Fatalf("testhydra: Stop: Hydra is not running")
	}
	p.stop()
}

// Restart starts a stopped Hydra again on the same ports, with the same
// database: the same issuer, clients and keys.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	running := s.proc != nil
	s.mu.Unlock()
	if running {
		t.Fatalf("testhydra: Restart: Hydra is running; Stop it first")
	}
	s.start(t)
}

// writeConfig writes Hydra's configuration file. JSON is YAML, so Hydra reads
// it as it is; every value is here, none from the environment (see start).
func (s *Server) writeConfig(t testing.TB) error {
	issuer := s.Issuer()
	oauth2 := map[string]any{
		"allowed_top_level_claims": s.opts.TopLevelClaims,
		"mirror_top_level_claims":  s.opts.Ext,
		"token_hook": map[string]any{
			"url": s.hook.URL + hookPath,
			"auth": map[string]any{
				"type":   "api_key",
				"config": map[string]any{"in": "header", "name": hookKeyHeader, "value": s.hookKey},
			},
		},
	}
	strategies := map[string]any{"access_token": "jwt"}
	if s.opts.ScopeClaim != "" {
		strategies["jwt"] = map[string]any{"scope_claim": s.opts.ScopeClaim}
	}
	cfg := map[string]any{
		"dsn": "sqlite://" + filepath.Join(s.dir, "hydra.sqlite") + "?_fk=true",
		"serve": map[string]any{
			"public": map[string]any{"host": "127.0.0.1", "port": s.publicPort},
			"admin":  map[string]any{"host": "127.0.0.1", "port": s.adminPort},
		},
		"urls":       map[string]any{"self": map[string]any{"issuer": issuer, "public": issuer}},
		"secrets":    map[string]any{"system": []string{randomHex(t, 32)}},
		"strategies": strategies,
		"oauth2":     oauth2,
		"log":        map[string]any{"level": "info", "leak_sensitive_values": false},
	}
	if s.opts.AccessTokenLifespan > 0 {
		cfg["ttl"] = map[string]any{"access_token": s.opts.AccessTokenLifespan.String()}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := os.WriteFile(s.config, b, 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// migrate creates Hydra's tables in the SQLite file (serve migrates only a
// memory DSN by itself).
func (s *Server) migrate(t testing.TB) {
	t.Helper()
	cmd := exec.Command(s.bin, "migrate", "sql", "up", "--read-from-env", "--yes", "--config", s.config)
	cmd.Env = s.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testhydra: hydra migrate sql up: %v\n%s", err, tail(out, 4096))
	}
}

// env is all of Hydra's environment: Hydra reads any variable named after a
// configuration key (DSN, LOG_LEVEL, SERVE_PUBLIC_PORT, …) over its file, so
// none of the test process's variables are passed on.
func (s *Server) env() []string {
	return []string{"HOME=" + s.dir, "TMPDIR=" + s.dir, "PATH=" + os.Getenv("PATH")}
}

// start spawns `hydra serve all` and waits until both ports report ready
// and the key set is served.
// --dev allows the plain-HTTP issuer; --sqa-opt-out keeps Hydra from sending
// usage statistics off the machine.
func (s *Server) start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	s.starts++
	n := s.starts
	s.mu.Unlock()
	logPath := filepath.Join(s.dir, "hydra.log")
	if n > 1 {
		logPath = filepath.Join(s.dir, "hydra-"+strconv.Itoa(n)+".log")
	}
	p, err := spawn(logPath, s.env(), s.bin, "serve", "all", "--dev", "--sqa-opt-out", "--config", s.config)
	if err != nil {
		t.Fatalf("testhydra: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("testhydra: %s (last 4 KiB):\n%s", filepath.Base(logPath), tail(b, 4096))
			}
		}
	})
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	// the key set as well: Hydra makes its signing keys as it starts, slowly on a loaded machine, and a
	// gateway fetches the key set as it loads
	for _, url := range []string{s.AdminURL() + "/health/ready", s.Issuer() + "health/ready", s.JWKSURL()} {
		testenv.Eventually(t, 60*time.Second, "Hydra "+url, func() error {
			if p.exited() {
				t.Fatalf("testhydra: hydra exited while starting; log %s", logPath)
			}
			return s.expect(http.MethodGet, url, nil, http.StatusOK, nil)
		})
	}
}

// process is a running hydra serve.
type process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

func spawn(logPath string, env []string, bin string, args ...string) (*process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start hydra: %w", err)
	}
	p := &process{cmd: cmd, log: f, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, kills after 10 s and waits for the process to end.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.log.Close()
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testhydra: random: %v", err)
	}
	return hex.EncodeToString(b)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
