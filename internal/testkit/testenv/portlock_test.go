package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestReservePortExcludesOtherProcesses holds a port's lock here and asks a
// child process (this test binary again) to take it: the child must fail
// while the lock is held and succeed once it is released.
func TestReservePortExcludesOtherProcesses(t *testing.T) {
	if p := os.Getenv("CIVICGATE_PORTLOCK_CHILD"); p != "" {
		port, _ := strconv.Atoi(p)
		if release, ok := reservePort(port); ok {
			release()
			os.Exit(0)
		}
		os.Exit(3)
	}
	const port = 19999 // below FreePort's range, so no parallel test draws it
	child := func() int {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReservePortExcludesOtherProcesses$")
		cmd.Env = append(os.Environ(), "CIVICGATE_PORTLOCK_CHILD="+strconv.Itoa(port))
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		return 0
	}
	release, ok := reservePort(port)
	if !ok {
		t.Fatalf("port %d is already reserved by another process", port)
	}
	if code := child(); code != 3 {
		t.Errorf("a second process reserved a held port (exit %d, want 3)", code)
	}
	release()
	if code := child(); code != 0 {
		t.Errorf("a second process could not reserve a released port (exit %d, want 0)", code)
	}
}
