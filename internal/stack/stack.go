// Package stack starts the real binaries (recordsd and civicgate) as
// processes against real PostgreSQL and Redis for end-to-end, reliability and
// benchmark tests, and gives an HTTPS client that trusts Caddy's local CA root
// from the stack's own data directory. Each stack gets its own database, Redis
// key prefix, ports and data directory (internal/testenv).
package stack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testenv"
)

// RepoRoot is the repository's top directory (this file's parent's parent).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Binaries builds civicgate and recordsd once per test binary run, into a
// temporary directory that Remove deletes (call it from TestMain). Under
// `go test -race` they are race-detector builds, and a process that reports a
// data race fails the test that started it (see SpawnProc).
type Binaries struct {
	once      sync.Once
	Dir       string
	err       error
	Civicgate string
	Recordsd  string
}

// Build compiles both binaries the first time it is called.
func (b *Binaries) Build(t testing.TB) {
	t.Helper()
	b.once.Do(func() {
		b.Dir, b.err = os.MkdirTemp("", "civicgate-e2e-bin-")
		if b.err != nil {
			return
		}
		root := RepoRoot(t)
		b.Civicgate = filepath.Join(b.Dir, "civicgate")
		b.Recordsd = filepath.Join(b.Dir, "recordsd")
		for out, pkg := range map[string]string{b.Civicgate: "./cmd/civicgate", b.Recordsd: "./cmd/recordsd"} {
			args := []string{"build", "-o", out}
			if raceBuild {
				args = append(args, "-race")
			}
			cmd := exec.Command("go", append(args, pkg)...)
			cmd.Dir = root
			if msg, err := cmd.CombinedOutput(); err != nil {
				b.err = fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
				return
			}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
}

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
	CARoot   string
	Client   *http.Client
	Logs     []string // files holding every process's output
}

var keyPattern = regexp.MustCompile(`cg_(live|test)_[0-9A-Za-z]+`)
var keyIDPattern = regexp.MustCompile(`key_[0-9A-Za-z]+`)

// New prepares the environment of a stack; start brings it up.
func New(t testing.TB, bins *Binaries) *Stack {
	t.Helper()
	bins.Build(t)
	s := &Stack{t: t, Bins: bins, Root: RepoRoot(t), Dir: t.TempDir()}
	s.DSN = testenv.Postgres(t)
	_, prefix := testenv.Redis(t)
	httpsPort := testenv.FreePort(t)
	httpPort := testenv.FreePort(t)
	adminPort := testenv.FreePort(t)
	upstream := testenv.FreePort(t)
	s.Env = append(os.Environ(),
		"DATABASE_URL="+s.DSN,
		"REDIS_URL=redis://"+testenv.RedisAddr()+"/0",
		"CIVICGATE_RL_PREFIX="+prefix,
		"RECORDSD_LISTEN=127.0.0.1:"+strconv.Itoa(upstream),
		"RECORDSD_CURSOR_SECRET="+testenv.RandomSuffix(32),
		"CIVIC_IDENTITY_SECRET="+testenv.RandomSuffix(32),
		"CIVICGATE_ENV=live",
		"CIVICGATE_UPSTREAM=127.0.0.1:"+strconv.Itoa(upstream),
		"CIVICGATE_HTTPS_PORT="+strconv.Itoa(httpsPort),
		"CIVICGATE_HTTP_PORT="+strconv.Itoa(httpPort),
		"CIVICGATE_ADMIN=localhost:"+strconv.Itoa(adminPort),
		"CIVICGATE_SCHEMA="+filepath.Join(s.Root, "backend", "schema", "records.graphqls"),
		"XDG_DATA_HOME="+filepath.Join(s.Dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(s.Dir, "config"),
	)
	s.HTTPSURL = "https://localhost:" + strconv.Itoa(httpsPort)
	s.HTTPURL = "http://localhost:" + strconv.Itoa(httpPort)
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

// Proc is a long-running process started by SpawnProc.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string // file holding its output
	done chan struct{}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill ends the process with SIGKILL (no shutdown of any kind, as a crash or
// the OOM killer would) and waits until it is gone.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to stop (SIGTERM), kills it after 10 s and waits.
func (p *Proc) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// Spawn starts a long-running process whose output goes to a log file; it is
// stopped with SIGTERM when the test ends.
func (s *Stack) Spawn(name, bin string, args ...string) *exec.Cmd {
	s.t.Helper()
	return s.SpawnProc(name, bin, args...).Cmd
}

// SpawnProc is Spawn returning the process handle. A name spawned again (a
// restart) logs to a new file, name-2.log, name-3.log, …
func (s *Stack) SpawnProc(name, bin string, args ...string) *Proc {
	s.t.Helper()
	logPath := filepath.Join(s.Dir, name+".log")
	for i := 2; ; i++ {
		if _, err := os.Stat(logPath); os.IsNotExist(err) {
			break
		}
		logPath = filepath.Join(s.Dir, name+"-"+strconv.Itoa(i)+".log")
	}
	f, err := os.Create(logPath)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Root
	cmd.Env = s.Env
	cmd.Stdout = f
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", name, err)
	}
	s.Logs = append(s.Logs, logPath)
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	s.t.Cleanup(func() {
		p.Stop()
		_ = f.Close()
		if b, err := os.ReadFile(logPath); err == nil {
			if report := raceReport(b); report != nil {
				s.t.Errorf("%s reported a data race:\n%s", filepath.Base(logPath), report)
			}
		}
		if s.t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				s.t.Logf("%s log (last 4 KiB):\n%s", filepath.Base(logPath), tail(b, 4096))
			}
		}
	})
	return p
}

// raceReport returns the first data-race report in a process's output (up
// to 8 KiB of it), or nil.
func raceReport(out []byte) []byte {
	i := bytes.Index(out, []byte("WARNING: DATA RACE"))
	if i < 0 {
		return nil
	}
	return out[i:min(len(out), i+8192)]
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Prepare migrates and seeds the database, and creates the key and webhook
// tables (both migrations are idempotent).
func (s *Stack) Prepare() {
	s.t.Helper()
	s.Run(s.Bins.Recordsd, "migrate")
	s.Run(s.Bins.Recordsd, "seed", "--scale", "small")
	s.Run(s.Bins.Civicgate, "keys", "migrate")
	s.Run(s.Bins.Civicgate, "webhooks", "migrate")
}

// StartRecordsd starts the backend and waits for its health endpoint.
func (s *Stack) StartRecordsd() *Proc {
	s.t.Helper()
	p := s.SpawnProc("recordsd", s.Bins.Recordsd, "serve")
	url := "http://" + s.Getenv("RECORDSD_LISTEN") + "/healthz"
	WaitFor(s.t, 30*time.Second, "recordsd /healthz", func() error {
		if p.Exited() {
			s.t.Fatalf("recordsd exited while starting; log %s", p.Log)
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	return p
}

// Remove deletes the built binaries.
func (b *Binaries) Remove() {
	if b.Dir != "" {
		_ = os.RemoveAll(b.Dir)
	}
}

// StartGateway starts civicgate with the given Caddyfile (relative to the
// repository) and waits until it answers over TLS with its local CA.
func (s *Stack) StartGateway(caddyfile string) *Proc {
	s.t.Helper()
	p := s.SpawnProc("civicgate", s.Bins.Civicgate, "run", "--config", caddyfile, "--adapter", "caddyfile")
	WaitFor(s.t, 60*time.Second, "gateway TLS with the local CA root", func() error {
		if p.Exited() {
			s.t.Fatalf("civicgate exited while starting; log %s", p.Log)
		}
		pem, err := os.ReadFile(s.CARoot)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", s.CARoot)
		}
		s.Client = &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		resp, err := s.Client.Get(s.HTTPSURL + "/v1/graphql")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return p
}

// WaitFor polls cond until it returns nil or the deadline passes.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// GatewayMetric reads one sample of an unlabelled metric (e.g. go_goroutines,
// process_resident_memory_bytes) from the gateway's admin /metrics endpoint.
func (s *Stack) GatewayMetric(ctx context.Context, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Getenv("CIVICGATE_ADMIN")+"/metrics", nil)
	if err != nil {
		return 0, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %w", name, err)
		}
		return f, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return 0, fmt.Errorf("metric %s not exposed", name)
}

// leakPatterns are things that must never appear in any process's log: a
// panic or a goroutine dump, and SQL text. Each is tried only on lines that
// hold one of its cheap markers (a soak's access log runs to tens of MiB).
var leakPatterns = []struct {
	markers []string
	re      *regexp.Regexp
}{
	{[]string{"panic", "runtime error", "goroutine "}, regexp.MustCompile(`panic:|runtime error|goroutine \d+ \[`)},
	{[]string{"SELECT", "select", "Select", "INSERT", "insert", "Insert", "UPDATE", "update", "Update", "DELETE", "delete", "Delete"},
		regexp.MustCompile(`(?i)\b(select\s.+\sfrom|insert\s+into|update\s+\w+\s+set|delete\s+from)\b`)},
}

// CheckLogs fails the test when any log of the stack contains one of the
// secrets (or its last 20 characters), a panic or stack trace, or SQL text.
func (s *Stack) CheckLogs(t testing.TB, secrets ...string) {
	t.Helper()
	var needles [][]byte
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		needles = append(needles, []byte(secret))
		if len(secret) > 20 {
			needles = append(needles, []byte(secret[len(secret)-20:]))
		}
	}
	for _, path := range s.Logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read log: %v", err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("%s contains a secret (…%s)", filepath.Base(path), n[:min(len(n), 6)])
			}
		}
		for len(b) > 0 {
			line, rest, _ := bytes.Cut(b, []byte("\n"))
			b = rest
			for _, p := range leakPatterns {
				hit := false
				for _, m := range p.markers {
					if bytes.Contains(line, []byte(m)) {
						hit = true
						break
					}
				}
				if hit && p.re.Match(line) {
					t.Errorf("%s matches %s: %.600s", filepath.Base(path), p.re, line)
				}
			}
		}
	}
}
