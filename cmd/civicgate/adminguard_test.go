package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// caddyfileWithAdmin is a minimal configuration with its admin endpoint on
// admin and one site answering on port.
func caddyfileWithAdmin(t *testing.T, admin string, port int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Caddyfile")
	body := fmt.Sprintf("{\n\tadmin %s\n\tpersist_config off\n\tstorage file_system %s\n}\n\nhttp://127.0.0.1:%d {\n\trespond \"ok\"\n}\n",
		admin, filepath.Join(t.TempDir(), "storage"), port)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckAdminAddress: an admin address something already listens on is
// refused for run and start; a free one, a disabled admin endpoint, other
// commands and configurations that do not load are left to Caddy.
func TestCheckAdminAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := caddyfileWithAdmin(t, taken.Addr().String(), testenv.FreePort(t))
	for _, cmd := range []string{"run", "start"} {
		err := checkAdminAddress([]string{cmd, "--config", cfg, "--adapter", "caddyfile"})
		var taken adminTakenError
		if !errors.As(err, &taken) || !strings.Contains(err.Error(), "admin address 127.0.0.1:") {
			t.Fatalf("%s: %v, want the admin address refused", cmd, err)
		}
	}
	if err := checkAdminAddress([]string{"run", "--config=" + cfg}); err == nil {
		t.Fatal("--config= form with the adapter found from the file name: not checked")
	}
	free := caddyfileWithAdmin(t, "127.0.0.1:"+fmt.Sprint(testenv.FreePort(t)), testenv.FreePort(t))
	off := caddyfileWithAdmin(t, "off", testenv.FreePort(t))
	for name, args := range map[string][]string{
		"free":        {"run", "--config", free, "--adapter", "caddyfile"},
		"admin off":   {"run", "--config", off, "--adapter", "caddyfile"},
		"reload":      {"reload", "--config", cfg, "--adapter", "caddyfile"},
		"validate":    {"validate", "--config", cfg},
		"missing":     {"run", "--config", filepath.Join(t.TempDir(), "nope"), "--adapter", "caddyfile"},
		"no command":  {},
		"bad adapter": {"run", "--config", cfg, "--adapter", "nope"},
	} {
		if err := checkAdminAddress(args); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// TestSecondGatewayOnTheSameAdminAddressRefused: the built binary, started
// beside a running one with the same admin address, exits 1 with the message
// instead of sharing the admin listener; the first keeps serving.
func TestSecondGatewayOnTheSameAdminAddressRefused(t *testing.T) {
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	site := testenv.FreePort(t)
	cfg := caddyfileWithAdmin(t, admin, site)
	first := exec.Command(binary, "run", "--config", cfg, "--adapter", "caddyfile")
	var firstLog lockedBuffer // written by the process's copier goroutine, read by the wait below
	first.Stdout, first.Stderr = &firstLog, &firstLog
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
	testenv.Eventually(t, 30*time.Second, "the first gateway's admin endpoint to answer", func() error {
		resp, err := http.Get("http://" + admin + "/config/")
		if err != nil {
			return fmt.Errorf("%w; the first gateway's output so far:\n%s", err, firstLog.String())
		}
		resp.Body.Close()
		return nil
	})
	second := exec.Command(binary, "run", "--config", caddyfileWithAdmin(t, admin, testenv.FreePort(t)), "--adapter", "caddyfile")
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second gateway: %v, want exit 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "civicgate: the admin address "+admin+" is already served by another process") {
		t.Fatalf("second gateway's message:\n%s", out)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", site))
	if err != nil {
		t.Fatalf("the first gateway stopped serving: %v", err)
	}
	resp.Body.Close()
}

// lockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
