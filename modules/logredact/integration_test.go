package logredact

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

const adminPort = 2997

// awaitLines waits until path holds n lines (Caddy writes an access log line
// once the response is written, so after the client may have read it).
func awaitLines(t *testing.T, path string, n int) string {
	t.Helper()
	var data []byte
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("%d lines in %s", n, path), func() error {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return err
		}
		if got := strings.Count(string(data), "\n"); got < n {
			return fmt.Errorf("%d lines:\n%s", got, data)
		}
		return nil
	})
	return string(data)
}

// TestAccessLogRedacted runs Caddy with two sites answering the same
// requests: one logs through civic_redact, the control through plain json.
// Keys in the query string (literal and percent-encoded) and in the Referer
// reach the control's log as sent and never the redacted one's.
func TestAccessLogRedacted(t *testing.T) {
	dir := t.TempDir()
	redacted, plain := filepath.Join(dir, "redacted.log"), filepath.Join(dir, "plain.log")
	p1, p2 := testenv.FreePort(t), testenv.FreePort(t)
	cfg := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
}
http://localhost:%d {
	log {
		output file %s
		format civic_redact {
			wrap json
		}
	}
	respond "ok"
}
http://localhost:%d {
	log {
		output file %s
		format json
	}
	respond "ok"
}
`, adminPort, p1, testenv.FreePort(t), p1, redacted, p2, plain)
	caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")

	requests := []struct{ target, referer string }{
		{"/bills?limit=2&access_token=" + liveKey, "https://example.org/search?api_key=" + testKey},
		{"/bills?api_key=cg%5Flive%5F" + liveKey[8:], ""},
		{"/v1/" + testKey + "/x", ""},
	}
	for _, port := range []int{p1, p2} {
		for _, r := range requests {
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://localhost:%d%s", port, r.target), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.referer != "" {
				req.Header.Set("Referer", r.referer)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", r.target, res.StatusCode)
			}
		}
	}

	control := awaitLines(t, plain, len(requests))
	for _, s := range []string{liveKey, testKey, "cg%5Flive%5F" + liveKey[8:]} {
		if !strings.Contains(control, s) {
			t.Fatalf("control log lacks %q: the test does not send what it means to:\n%s", s, control)
		}
	}
	got := awaitLines(t, redacted, len(requests))
	checkRedacted(t, got)
	for _, want := range []string{
		`"uri":"/bills?limit=2&access_token=cg_live_REDACTED"`,
		`"Referer":["https://example.org/search?api_key=cg_test_REDACTED"]`,
		`"uri":"/bills?api_key=cg%5Flive%5FREDACTED"`,
		`"uri":"/v1/cg_test_REDACTED/x"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("redacted log lacks %s:\n%s", want, got)
		}
	}
}

// TestBinaryIncludesModule: cmd/civicgate imports this package, so the
// civicgate binary has caddy.logging.encoders.civic_redact.
func TestBinaryIncludesModule(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "list", "-deps", "./cmd/civicgate")
	cmd.Dir = filepath.Join(filepath.Dir(here), "..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\ngithub.com/civicgate/civicgate/modules/logredact\n") {
		t.Fatal("cmd/civicgate does not import modules/logredact")
	}
}
