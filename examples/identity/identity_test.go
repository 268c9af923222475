// Package identity holds the test of examples/identity: run.sh, run for real
// as a reader would, with ORY Hydra issuing the access tokens civicgate
// admits (README.md).
package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	graphql "github.com/hasura/go-graphql-client"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testhydra"
)

// ports are the example's, drawn free for this run (run.sh's defaults are
// 4444, 4445, 4100, 4180 and 4119).
type ports struct {
	hydra, hydraAdmin, library, gateway, gatewayAdmin int
}

// script is run.sh running in a process group of its own.
type script struct {
	cmd  *exec.Cmd
	out  *outputBuffer
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// outputBuffer is run.sh's stdout and stderr, read while it runs.
type outputBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *outputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *outputBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var (
	readyLine     = regexp.MustCompile(`(?m)^ready: .*\(pids (\d+) (\d+) (\d+)\)`)
	printedToken  = regexp.MustCompile(`-H 'Authorization: Bearer ([A-Za-z0-9_.-]+)'`)
	printedCurl   = regexp.MustCompile(`(?m)^curl -s http://\S+/graphql \\\n(?:  .*\\\n)*  -d '.*'$`)
	hydraUsed     = regexp.MustCompile(`(?m)^==> Hydra: the tests' build (\S+)$`)
	workDirLine   = regexp.MustCompile(`(?m)^==> logs in (\S+);`)
	cacheKeyDir   = regexp.MustCompile(`^[0-9a-f]{16}$`)
	booksAnswer   = `{"data":{"books":{"nodes":[{"title":"Middlemarch","author":{"name":"George Eliot"}},{"title":"Silas Marner","author":{"name":"George Eliot"}}]}}}`
	refusalAnswer = `{"error":"Tier not entitled to this endpoint family"}`
)

// TestRunScript runs examples/identity/run.sh, queries the gateway with the
// token it printed, checks the refusal and the RFC 9728 document, then stops
// it with SIGINT as Ctrl-C would and checks that every process it started
// has ended.
func TestRunScript(t *testing.T) {
	testenv.NeedsServices(t)
	root := stack.RepoRoot(t)
	// The tests' Hydra build, which run.sh reuses instead of building its
	// own (minutes cold).
	hydra := testhydra.Binary(t)
	p := ports{
		hydra: testenv.FreePort(t), hydraAdmin: testenv.FreePort(t), library: testenv.FreePort(t),
		gateway: testenv.FreePort(t), gatewayAdmin: testenv.FreePort(t),
	}
	env := []string{
		"HYDRA_PORT=" + strconv.Itoa(p.hydra), "HYDRA_ADMIN_PORT=" + strconv.Itoa(p.hydraAdmin),
		"LIBRARY_PORT=" + strconv.Itoa(p.library), "GATEWAY_PORT=" + strconv.Itoa(p.gateway),
		"GATEWAY_ADMIN_PORT=" + strconv.Itoa(p.gatewayAdmin),
		"BIN_DIR=" + t.TempDir(), "TMPDIR=" + t.TempDir(),
	}
	cacheDir := filepath.Dir(hydra)
	reused := cacheKeyDir.MatchString(filepath.Base(cacheDir))
	if reused {
		env = append(env, testhydra.CacheDirEnv+"="+filepath.Dir(cacheDir))
	} else {
		t.Logf("Hydra was built outside a cache (%s): run.sh builds its own", hydra)
	}

	s := startScript(t, root, env)
	var pids []int
	testenv.Eventually(t, 8*time.Minute, "run.sh's ready line", func() error {
		if s.exited() {
			t.Fatalf("run.sh ended before it was ready: %v", s.err)
		}
		m := readyLine.FindStringSubmatch(s.out.String())
		if m == nil {
			return errors.New("not printed yet")
		}
		for _, v := range m[1:] {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("ready line: pid %q: %v", v, err)
			}
			pids = append(pids, pid)
		}
		return nil
	})
	out := s.out.String()
	if reused {
		if m := hydraUsed.FindStringSubmatch(out); m == nil || m[1] != hydra {
			t.Errorf("run.sh did not reuse the tests' Hydra %s", hydra)
		}
	}
	m := printedToken.FindStringSubmatch(out)
	if m == nil {
		t.Fatal("run.sh printed no curl with a bearer token")
	}
	token := m[1]
	gateway := "http://127.0.0.1:" + strconv.Itoa(p.gateway)
	audience := gateway + "/graphql"

	t.Run("script shows the answer and the refusal", func(t *testing.T) {
		if !strings.Contains(out, booksAnswer+" (HTTP 200)") {
			t.Errorf("run.sh did not show the books answer %s", booksAnswer)
		}
		if !strings.Contains(out, refusalAnswer+" (HTTP 403)") {
			t.Errorf("run.sh did not show the refusal %s", refusalAnswer)
		}
	})

	t.Run("the printed curl works when pasted", func(t *testing.T) {
		curl := printedCurl.FindString(out)
		if curl == "" {
			t.Fatal("no curl of the library in run.sh's output")
		}
		got, err := exec.Command("bash", "-c", curl).Output()
		if err != nil {
			t.Fatalf("the printed curl: %v", err)
		}
		if string(got) != booksAnswer {
			t.Errorf("the printed curl answered %s, want %s", got, booksAnswer)
		}
	})

	t.Run("go-graphql-client with the token", func(t *testing.T) {
		c := graphql.NewClient(audience, http.DefaultClient).
			WithRequestModifier(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) })
		var q struct {
			Books struct {
				Nodes []struct {
					Title  string
					Author struct{ Name string }
				}
			} `graphql:"books(first: $first)"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Query(ctx, &q, map[string]any{"first": 3}); err != nil {
			t.Fatalf("query with the token: %v", err)
		}
		var titles []string
		for _, n := range q.Books.Nodes {
			titles = append(titles, n.Title+" / "+n.Author.Name)
		}
		want := []string{"Middlemarch / George Eliot", "Silas Marner / George Eliot", "Beloved / Toni Morrison"}
		if !slices.Equal(titles, want) {
			t.Errorf("books = %q, want %q", titles, want)
		}
		var loans struct {
			Loans []struct{ Due string } `graphql:"loans(memberId: $member)"`
		}
		if err := c.Query(ctx, &loans, map[string]any{"member": graphql.ID("m1")}); err == nil {
			t.Error("the member tier's token read loans, a family it lacks")
		}
	})

	t.Run("refusal of a family the tier lacks", func(t *testing.T) {
		status, hdr, body := post(t, audience, token, `{"query":"{ loans(memberId: \"m1\") { due } }"}`)
		if status != http.StatusForbidden || body != refusalAnswer {
			t.Errorf("loans with a member token: %d %s, want 403 %s", status, body, refusalAnswer)
		}
		if got := hdr.Get("Content-Type"); got != "application/json" {
			t.Errorf("refusal Content-Type %q", got)
		}
	})

	t.Run("401 names the RFC 9728 metadata", func(t *testing.T) {
		status, hdr, _ := post(t, audience, "", `{"query":"{ books { nodes { id } } }"}`)
		want := `Bearer realm="civicgate", resource_metadata="` + gateway + `/.well-known/oauth-protected-resource/graphql"`
		if status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != want {
			t.Errorf("no token: %d, WWW-Authenticate %q, want 401 %q", status, hdr.Get("WWW-Authenticate"), want)
		}
	})

	t.Run("RFC 9728 document", func(t *testing.T) {
		res, err := http.Get(gateway + "/.well-known/oauth-protected-resource/graphql")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var doc struct {
			Resource               string   `json:"resource"`
			AuthorizationServers   []string `json:"authorization_servers"`
			ScopesSupported        []string `json:"scopes_supported"`
			BearerMethodsSupported []string `json:"bearer_methods_supported"`
			ResourceName           string   `json:"resource_name"`
		}
		if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
			t.Fatalf("status %d: %v", res.StatusCode, err)
		}
		issuer := "http://127.0.0.1:" + strconv.Itoa(p.hydra) + "/"
		if res.StatusCode != http.StatusOK || doc.Resource != audience ||
			!slices.Equal(doc.AuthorizationServers, []string{issuer}) ||
			!slices.Equal(doc.ScopesSupported, []string{"library:member", "library:staff"}) ||
			!slices.Equal(doc.BearerMethodsSupported, []string{"header"}) ||
			doc.ResourceName != "Example lending library" {
			t.Errorf("status %d, document %+v; want resource %s, authorization server %s, scopes library:member library:staff", res.StatusCode, doc, audience, issuer)
		}
	})

	// The logs are the script's, in its work directory until it stops.
	workDir := ""
	if m := workDirLine.FindStringSubmatch(out); m != nil {
		workDir = m[1]
	}
	t.Run("no token in a log", func(t *testing.T) {
		if workDir == "" {
			t.Fatal("run.sh named no work directory")
		}
		for _, name := range []string{"civicgate.log", "libraryd.log", "hydra.log"} {
			b, err := os.ReadFile(filepath.Join(workDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(token)) {
				t.Errorf("%s holds the access token", name)
			}
		}
	})

	// Ctrl-C: SIGINT to the script alone, so that its trap, not the
	// signal, has to stop the others.
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyTrue(t, 60*time.Second, "run.sh to end after SIGINT", s.exited)
	var exit *exec.ExitError
	if !errors.As(s.err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("run.sh after SIGINT: %v, want exit status 130", s.err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after run.sh ended (kill 0: %v)", pid, err)
		}
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("run.sh's process group still has a process (kill 0: %v)", err)
	}
	for _, port := range []int{p.hydra, p.hydraAdmin, p.library, p.gateway, p.gatewayAdmin} {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 2*time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still accepts connections", port)
		}
	}
	if workDir != "" {
		if _, err := os.Stat(workDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run.sh left its work directory %s (stat: %v)", workDir, err)
		}
	}
	if !strings.Contains(s.out.String(), "==> stopped") {
		t.Error("run.sh did not report its stop")
	}
}

// startScript starts run.sh from the repository root with env added to this
// process's, in a process group of its own. If the test ends with it still
// running, the whole group gets SIGINT, then SIGKILL.
func startScript(t *testing.T, root string, env []string) *script {
	t.Helper()
	s := &script{out: &outputBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command("bash", filepath.Join("examples", "identity", "run.sh"))
	s.cmd.Dir = root
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start run.sh: %v", err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		// Every check's failure message leaves the output to this.
		if t.Failed() {
			t.Logf("run.sh's output:\n%s", s.out)
		}
		if s.exited() {
			return
		}
		pgid := s.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-s.done
		}
	})
	return s
}

func (s *script) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// post sends a GraphQL request, with a bearer token unless it is empty, and
// returns the status, headers and body.
func post(t *testing.T, url, token, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, b.String()
}
