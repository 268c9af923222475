// Package stack starts the real binaries (recordsd and civicgate) as
// processes against real PostgreSQL and Redis for end-to-end, reliability and
// benchmark tests, and gives an HTTPS client that trusts Caddy's local CA root
// from the stack's own data directory. Each stack gets its own database, Redis
// key prefix, ports and data directory (internal/testkit/testenv).
package stack

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// Stack is one running recordsd + civicgate pair with its own database,
// Redis key prefix, ports and Caddy data directory.
type Stack struct {
	t        testing.TB
	Bins     *Binaries
	Root     string
	Dir      string
	Env      []string
	DSN      string
	HTTPSURL string
	HTTPURL  string
	// ConsoleURL is the organization console's site (Caddyfile.local's
	// CIVICGATE_CONSOLE_PORT), its own port per stack.
	ConsoleURL string
	CARoot     string
	Client     *http.Client
	Logs       []string // files holding every process's output
}

var keyPattern = regexp.MustCompile(`cg_(live|test)_[0-9A-Za-z]+`)
var keyIDPattern = regexp.MustCompile(`key_[0-9A-Za-z]+`)

// New prepares the environment of a stack; start brings it up.
func New(t testing.TB, bins *Binaries) *Stack {
	t.Helper()
	testenv.NeedsServices(t)
	bins.Build(t)
	s := &Stack{t: t, Bins: bins, Root: RepoRoot(t), Dir: t.TempDir()}
	s.DSN = testenv.Postgres(t)
	_, prefix := testenv.Redis(t)
	httpsPort := testenv.FreePort(t)
	httpPort := testenv.FreePort(t)
	adminPort := testenv.FreePort(t)
	upstream := testenv.FreePort(t)
	consolePort := testenv.FreePort(t)
	s.Env = append(os.Environ(),
		"DATABASE_URL="+s.DSN,
		"REDIS_URL=redis://"+testenv.RedisAddr()+"/0",
		"CIVICGATE_RL_PREFIX="+prefix,
		"CIVICGATE_CACHE_PREFIX="+prefix+"cache:",
		"RECORDSD_LISTEN=127.0.0.1:"+strconv.Itoa(upstream),
		"RECORDSD_CURSOR_SECRET="+testenv.RandomSuffix(32),
		"CIVIC_IDENTITY_SECRET="+testenv.RandomSuffix(32),
		"CIVICGATE_ENV=live",
		"CIVICGATE_UPSTREAM=127.0.0.1:"+strconv.Itoa(upstream),
		"CIVICGATE_HTTPS_PORT="+strconv.Itoa(httpsPort),
		"CIVICGATE_HTTP_PORT="+strconv.Itoa(httpPort),
		"CIVICGATE_ADMIN=localhost:"+strconv.Itoa(adminPort),
		"CIVICGATE_CONSOLE_PORT="+strconv.Itoa(consolePort),
		"CIVICGATE_CONSOLE_URL=https://localhost:"+strconv.Itoa(consolePort),
		"CIVICGATE_SCHEMA="+filepath.Join(s.Root, "backend", "schema", "records.graphqls"),
		"XDG_DATA_HOME="+filepath.Join(s.Dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(s.Dir, "config"),
	)
	s.HTTPSURL = "https://localhost:" + strconv.Itoa(httpsPort)
	s.HTTPURL = "http://localhost:" + strconv.Itoa(httpPort)
	s.ConsoleURL = "https://localhost:" + strconv.Itoa(consolePort)
	s.CARoot = filepath.Join(s.Dir, "data", "caddy", "pki", "authorities", "local", "root.crt")
	return s
}

// Setenv overrides one variable of the stack's environment.
func (s *Stack) Setenv(key, value string) {
	for i, kv := range s.Env {
		if strings.HasPrefix(kv, key+"=") {
			s.Env[i] = key + "=" + value
			return
		}
	}
	s.Env = append(s.Env, key+"="+value)
}

// Getenv reads one variable of the stack's environment.
func (s *Stack) Getenv(key string) string {
	for i := len(s.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(s.Env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// Run runs a binary to completion and returns its standard output.
func (s *Stack) Run(bin string, args ...string) string {
	s.t.Helper()
	out, err := s.RunErr(bin, args...)
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return out
}

// RunErr is Run that returns the error and all output instead of failing.
func (s *Stack) RunErr(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = s.Root
	cmd.Env = s.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// IssueKey issues a key and returns it with its id.
func (s *Stack) IssueKey(org, tier, env string) (key, id string) {
	s.t.Helper()
	out := s.Run(s.Bins.Civicgate, "keys", "issue", "--org", org, "--tier", tier, "--env", env)
	key = keyPattern.FindString(out)
	id = keyIDPattern.FindString(out)
	if key == "" || id == "" {
		s.t.Fatalf("keys issue printed no key or id: %q", keyPattern.ReplaceAllString(out, "cg_…"))
	}
	return key, id
}

// Prepare migrates and seeds the database, and creates the key, usage,
// console and webhook tables (every migration is idempotent).
func (s *Stack) Prepare() {
	s.t.Helper()
	s.Run(s.Bins.Recordsd, "migrate")
	s.Run(s.Bins.Recordsd, "seed", "--scale", "small")
	s.Run(s.Bins.Civicgate, "keys", "migrate")
	s.Run(s.Bins.Civicgate, "console", "migrate")
	s.Run(s.Bins.Civicgate, "webhooks", "migrate")
}
