// Package scripts holds the tests of the shell scripts beside it.
package scripts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// Stand-ins for what scripts/up.sh runs, so its own behaviour is tested
// without a build, PostgreSQL or Redis (make up itself runs the real ones):
// each writes JSON log lines as the real binaries do, and the servers record
// their pid and stop on SIGTERM.
const (
	recordsdStub = `#!/usr/bin/env bash
case "$1" in
migrate|seed) echo '{"level":"info","logger":"recordsd","msg":"'"$1"' done"}' >&2 ;;
serve)
	echo $$ >"$STUB_PIDS/recordsd"
	trap 'kill $s 2>/dev/null; echo "{\"level\":\"info\",\"msg\":\"recordsd stopped\"}" >&2; exit 0' TERM
	echo '{"level":"info","logger":"recordsd","msg":"serving"}' >&2
	sleep 300 & s=$!
	wait $s ;;
esac
`
	civicgateStub = `#!/usr/bin/env bash
case "$1 $2" in
"keys migrate"|"webhooks migrate") echo '{"level":"info","msg":"'"$1"' migrated"}' >&2 ;;
"webhooks check-key"|"keys list") ;;
"keys issue") echo "Key ID: key_stub"; echo "API key: cg_live_Stub0123456789" ;;
"console link") echo "https://localhost:8444/signin/link?token=stub"; echo "(single use)" ;;
"run --config")
	if [ -n "${STUB_GATEWAY_FAILS:-}" ]; then echo '{"level":"error","msg":"loading config: stub failure"}' >&2; exit 1; fi
	echo $$ >"$STUB_PIDS/civicgate"
	trap 'kill $s 2>/dev/null; echo "{\"level\":\"info\",\"msg\":\"gateway stopped\"}" >&2; exit 0' TERM
	mkdir -p "$XDG_DATA_HOME/caddy/pki/authorities/local"
	touch "$XDG_DATA_HOME/caddy/pki/authorities/local/root.crt"
	echo '{"level":"info","logger":"http.log.access","msg":"handled request","status":401}' >&2
	sleep 300 & s=$!
	wait $s ;;
esac
`
	// psql answers that the database exists; curl that the site answers once the CA root exists.
	psqlStub = "#!/usr/bin/env bash\necho 1\n"
	curlStub = `#!/usr/bin/env bash
while [ $# -gt 0 ]; do if [ "$1" = --cacert ]; then [ -f "$2" ]; exit; fi; shift; done
exit 1
`
)

const bannerEnd = "Ctrl-C stops everything make up started."

// upRun is scripts/up.sh running in a checkout of stand-ins.
type upRun struct {
	root, pids string
	cmd        *exec.Cmd
	mu         sync.Mutex
	out        bytes.Buffer // stdout and stderr, as a terminal shows them
	done       chan struct{}
	err        error
}

func (r *upRun) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *upRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// startUp lays out a checkout with scripts/up.sh and the stand-ins and starts
// the script in its own process group, as a terminal runs a foreground job.
func startUp(t *testing.T, env ...string) *upRun {
	t.Helper()
	root := t.TempDir()
	script, err := os.ReadFile("up.sh")
	if err != nil {
		t.Fatal(err)
	}
	r := &upRun{root: root, pids: filepath.Join(root, "pids"), done: make(chan struct{})}
	for name, body := range map[string]string{
		"scripts/up.sh": string(script), "bin/recordsd": recordsdStub, "bin/civicgate": civicgateStub,
		"path/psql": psqlStub, "path/curl": curlStub, "caddyfile/Caddyfile.local": "",
	} {
		file := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(r.pids, 0o755); err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command("bash", filepath.Join(root, "scripts", "up.sh"))
	r.cmd.Env = append(os.Environ(), append([]string{
		"PATH=" + filepath.Join(root, "path") + ":" + os.Getenv("PATH"),
		"STUB_PIDS=" + r.pids, "CIVICGATE_UP_VERBOSE=",
	}, env...)...)
	r.cmd.Stdout, r.cmd.Stderr = r, r
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
		for _, name := range []string{"recordsd", "civicgate"} {
			if pid := r.pid(name); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return r
}

// awaitBanner waits for the banner's last line.
func (r *upRun) awaitBanner(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "make up's banner", func() error {
		select {
		case <-r.done:
			t.Fatalf("up.sh ended before its banner (%v):\n%s", r.err, r.output())
		default:
		}
		if !strings.Contains(r.output(), bannerEnd) {
			return errors.New("no banner yet")
		}
		return nil
	})
}

// interrupt sends SIGINT to the script's process group, as Ctrl-C in a
// terminal does, and returns the script's exit code.
func (r *upRun) interrupt(t *testing.T) int {
	t.Helper()
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	return r.exitCode(t)
}

func (r *upRun) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("up.sh did not end:\n%s", r.output())
	}
	var ee *exec.ExitError
	switch {
	case r.err == nil:
		return 0
	case errors.As(r.err, &ee):
		return ee.ExitCode() // -1: ended by a signal
	default:
		t.Fatal(r.err)
		return -1
	}
}

// pid is the pid a stand-in server recorded, 0 if it did not start.
func (r *upRun) pid(name string) int {
	b, err := os.ReadFile(filepath.Join(r.pids, name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// checkServersStopped: both servers started and no longer run.
func (r *upRun) checkServersStopped(t *testing.T) {
	t.Helper()
	for _, name := range []string{"recordsd", "civicgate"} {
		pid := r.pid(name)
		if pid == 0 {
			t.Errorf("%s never started", name)
		} else if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still runs after up.sh ended (kill -0: %v)", name, pid, err)
		}
	}
}

// jsonLine is a line of a server's JSON log.
var jsonLine = regexp.MustCompile(`(?m)^\{"level"`)

// TestUpIsQuietAndStopsOnCtrlC: by default make up's terminal shows its own
// lines and the banner, no JSON log line (the readiness probe's 401 among
// them); the logs are in .civicgate/logs/, whose paths the banner prints.
// Ctrl-C stops both servers and the script exits 0, so make reports no error.
func TestUpIsQuietAndStopsOnCtrlC(t *testing.T) {
	r := startUp(t)
	r.awaitBanner(t)
	out := r.output()
	if m := jsonLine.FindString(out); m != "" {
		t.Errorf("a JSON log line reached the terminal:\n%s", out)
	}
	logs := filepath.Join(r.root, ".civicgate", "logs")
	for file, want := range map[string]string{
		"civicgate.log": `"status":401`, "recordsd.log": `"msg":"serving"`, "setup.log": `"msg":"seed done"`,
	} {
		path := filepath.Join(logs, file)
		if !strings.Contains(out, path) {
			t.Errorf("the banner does not name %s:\n%s", path, out)
		}
		if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s does not hold %s (%v):\n%s", path, want, err, b)
		}
	}
	if !strings.Contains(out, "API key: cg_live_Stub0123456789") {
		t.Errorf("the banner does not show the demo key:\n%s", out)
	}
	if code := r.interrupt(t); code != 0 {
		t.Errorf("up.sh after Ctrl-C: exit %d, want 0 (make prints an error otherwise):\n%s", code, r.output())
	}
	r.checkServersStopped(t)
	if b, _ := os.ReadFile(filepath.Join(logs, "civicgate.log")); !strings.Contains(string(b), "gateway stopped") {
		t.Errorf("the gateway was not stopped with SIGTERM:\n%s", b)
	}
}

// TestUpVerbosePrintsLogs: CIVICGATE_UP_VERBOSE=1 keeps the logs on the
// terminal; Ctrl-C still stops everything and exits 0.
func TestUpVerbosePrintsLogs(t *testing.T) {
	r := startUp(t, "CIVICGATE_UP_VERBOSE=1")
	r.awaitBanner(t)
	// The servers' lines come from background processes: await them.
	testenv.Eventually(t, 10*time.Second, "the servers' JSON lines on the terminal", func() error {
		for _, want := range []string{`"status":401`, `"msg":"serving"`, `"msg":"seed done"`} {
			if !strings.Contains(r.output(), want) {
				return errors.New("no " + want + " yet")
			}
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(r.root, ".civicgate", "logs", "civicgate.log")); err == nil {
		t.Error("verbose: civicgate.log was written all the same")
	}
	if code := r.interrupt(t); code != 0 {
		t.Errorf("up.sh after Ctrl-C: exit %d, want 0:\n%s", code, r.output())
	}
	r.checkServersStopped(t)
}

// TestUpReportsAGatewayThatDoesNotStart: a gateway that exits at start is
// named with the end of its log, and up.sh exits 1 without a banner.
func TestUpReportsAGatewayThatDoesNotStart(t *testing.T) {
	r := startUp(t, "STUB_GATEWAY_FAILS=1")
	if code := r.exitCode(t); code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, r.output())
	}
	out := r.output()
	if !strings.Contains(out, "up: civicgate stopped before the gateway answered") ||
		!strings.Contains(out, "loading config: stub failure") || strings.Contains(out, bannerEnd) {
		t.Errorf("want the failure named with its log line and no banner:\n%s", out)
	}
	// recordsd may be stopped before it recorded its pid: judged only when it did.
	if pid := r.pid("recordsd"); pid != 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Errorf("recordsd (pid %d) was not stopped", pid)
	}
}
