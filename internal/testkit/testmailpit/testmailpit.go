// Package testmailpit runs Mailpit (github.com/axllent/mailpit), a real SMTP
// server with an HTTP API, for tests of mail sending. It is built once per
// machine from the version pinned in tools/mailpit/go.mod (go list -m
// -versions github.com/axllent/mailpit), the way testhydra builds Hydra, and
// kept in the user's cache directory.
package testmailpit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

const mailpitModule = "github.com/axllent/mailpit"

var (
	binMu   sync.Mutex
	binPath string
)

// Binary returns the path of a Mailpit binary, building it on first use.
func Binary(t testing.TB) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if binPath != "" {
		return binPath
	}
	root := stack.RepoRoot(t)
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, "tools", "mailpit", name))
		if err != nil {
			t.Fatalf("testmailpit: read the tool module: %v", err)
		}
		h.Write(b)
	}
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "civicgate-testmailpit", hex.EncodeToString(h.Sum(nil))[:16])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testmailpit: %v", err)
	}
	bin := filepath.Join(dir, "mailpit")
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("testmailpit: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("testmailpit: lock: %v", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(bin); err != nil {
		tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
		defer os.Remove(tmp)
		cmd := exec.Command("go", "build", "-C", filepath.Join(root, "tools", "mailpit"), "-buildvcs=false", "-o", tmp, mailpitModule)
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("testmailpit: go build %s: %v\n%s", mailpitModule, err, out)
		}
		if err := os.Rename(tmp, bin); err != nil {
			t.Fatalf("testmailpit: %v", err)
		}
	}
	binPath = bin
	return bin
}

// Server is a running Mailpit.
type Server struct {
	SMTPPort, HTTPPort int
	opts               Options
	bin, dir           string
	cmd                *exec.Cmd
	t                  testing.TB
}

// Options make Mailpit's SMTP side a production-like server: TLS with a
// certificate (PEM files), STARTTLS or implicit TLS required, and AUTH.
type Options struct {
	TLSCert, TLSKey string // PEM files; both or neither
	RequireSTARTTLS bool   // refuse mail before STARTTLS
	RequireTLS      bool   // implicit TLS: TLS from the first byte
	// AuthFile holds "user:password" lines; AUTH is then required.
	AuthFile string
}

// Start runs Mailpit on free loopback ports (plain SMTP, no auth), stopped
// at the end of the test. Its mails are kept in a database of the test's
// temporary directory, so Stop and Start keep them.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith runs Mailpit as Start does, with opts.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	testenv.NeedsServices(t)
	s := &Server{SMTPPort: testenv.FreePort(t), HTTPPort: testenv.FreePort(t), opts: opts, bin: Binary(t), dir: t.TempDir(), t: t}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// SMTPURL is the server's address as the outbox's SMTP URL.
func (s *Server) SMTPURL() string { return fmt.Sprintf("smtp://127.0.0.1:%d?tls=none", s.SMTPPort) }

// Start (re)starts the server on its ports and waits until both answer.
func (s *Server) Start() {
	s.t.Helper()
	args := []string{"--smtp", fmt.Sprintf("127.0.0.1:%d", s.SMTPPort), "--listen", fmt.Sprintf("127.0.0.1:%d", s.HTTPPort),
		"--database", filepath.Join(s.dir, "mailpit.db"), "--smtp-disable-rdns", "--quiet"}
	o := s.opts
	if o.TLSCert != "" {
		args = append(args, "--smtp-tls-cert", o.TLSCert, "--smtp-tls-key", o.TLSKey)
	}
	if o.RequireSTARTTLS {
		args = append(args, "--smtp-require-starttls")
	}
	if o.RequireTLS {
		args = append(args, "--smtp-require-tls")
	}
	if o.AuthFile != "" {
		args = append(args, "--smtp-auth-file", o.AuthFile)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("testmailpit: start: %v", err)
	}
	s.cmd = cmd
	testenv.Eventually(s.t, 30*time.Second, "mailpit to answer", func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.SMTPPort), time.Second)
		if err != nil {
			return err
		}
		c.Close()
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/messages", s.HTTPPort))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

// Stop stops the server (a mail outage) and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Mail is one received mail as the API lists it, with its bodies.
type Mail struct {
	ID      string
	To      []struct{ Address string }
	Subject string
	Text    string
	HTML    string
	Headers map[string][]string
}

// Mails returns every received mail, oldest first, with bodies and headers.
func (s *Server) Mails(t testing.TB) []Mail {
	t.Helper()
	var list struct{ Messages []Mail }
	s.get(t, "/api/v1/messages?limit=1000", &list)
	out := make([]Mail, 0, len(list.Messages))
	for i := len(list.Messages) - 1; i >= 0; i-- {
		var m Mail
		s.get(t, "/api/v1/message/"+list.Messages[i].ID, &m)
		s.get(t, "/api/v1/message/"+list.Messages[i].ID+"/headers", &m.Headers)
		out = append(out, m)
	}
	return out
}

// MailsTo returns the mails to addr.
func (s *Server) MailsTo(t testing.TB, addr string) []Mail {
	t.Helper()
	var out []Mail
	for _, m := range s.Mails(t) {
		for _, to := range m.To {
			if to.Address == addr {
				out = append(out, m)
			}
		}
	}
	return out
}

func (s *Server) get(t testing.TB, path string, v any) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", s.HTTPPort, path))
	if err != nil {
		t.Fatalf("testmailpit: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("testmailpit: GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("testmailpit: GET %s: %v", path, err)
	}
}
