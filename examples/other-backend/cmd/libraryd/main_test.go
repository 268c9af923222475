package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestMain lets the tests run this binary as libraryd itself: the real main, its real exit status.
func TestMain(m *testing.M) {
	if os.Getenv("LIBRARYD_TEST_AS_MAIN") == "1" {
		os.Args = append([]string{"libraryd"}, strings.Fields(os.Getenv("LIBRARYD_TEST_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

// libraryd starts this test binary as libraryd with args; the caller waits for it.
func libraryd(t *testing.T, ctx context.Context, args string, env ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe)
	// An address of its own even if --help were ignored and it served: nothing here may take 4000.
	cmd.Env = append(os.Environ(), append([]string{"LIBRARYD_TEST_AS_MAIN=1", "LIBRARYD_TEST_ARGS=" + args,
		"LIBRARY_LISTEN=127.0.0.1:0"}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stdout, &stderr
}

// TestHelpPrintsUsageAndExits: --help and -h print the usage once, on stdout, and exit 0 at once instead of
// serving; a bad flag or argument exits 2 with the reason and the usage once on stderr. The flag package's own
// block (its "Usage of libraryd:" and "-listen string") is never printed: before, --help showed it on stderr
// besides the usage on stdout, so a terminal showed the help twice.
func TestHelpPrintsUsageAndExits(t *testing.T) {
	for _, tc := range []struct {
		args       string
		code       int
		stdout     string // exactly
		stderrHead string // the line before the usage on stderr
	}{
		{args: "--help", code: 0, stdout: usageText},
		{args: "-h", code: 0, stdout: usageText},
		{args: "-help", code: 0, stdout: usageText},
		{args: "--bogus", code: 2, stderrHead: "libraryd: flag provided but not defined: -bogus\n"},
		{args: "serve", code: 2, stderrHead: `libraryd: unexpected argument "serve"` + "\n"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd, stdout, stderr := libraryd(t, ctx, tc.args)
			err := cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("libraryd %s did not exit (it served?): stdout %q stderr %q", tc.args, stdout, stderr)
			}
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			wantStderr := ""
			if tc.stderrHead != "" {
				wantStderr = tc.stderrHead + usageText
			}
			if code != tc.code || stdout.String() != tc.stdout || stderr.String() != wantStderr {
				t.Fatalf("libraryd %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d\nstdout:\n%s\nstderr:\n%s",
					tc.args, code, stdout, stderr, tc.code, tc.stdout, wantStderr)
			}
		})
	}
	if !strings.Contains(usageText, "LIBRARY_LISTEN") || !strings.Contains(usageText, "CIVIC_IDENTITY_SECRET") {
		t.Error("the usage names neither LIBRARY_LISTEN nor CIVIC_IDENTITY_SECRET")
	}
}

// TestServesOnListenAndStopsOnSIGTERM: --listen is where it serves; SIGTERM ends it with status 0.
func TestServesOnListenAndStopsOnSIGTERM(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, _, stderr := libraryd(t, ctx, "--listen "+addr)
	testenv.Eventually(t, 20*time.Second, "libraryd answering on "+addr, func() error {
		resp, err := http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"{ __typename }"}`))
		if err != nil {
			return err // stderr is still being written: read once the process ends
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST /graphql = %d", resp.StatusCode)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("libraryd after SIGTERM: %v (stderr %q)", err, stderr)
	}
}
