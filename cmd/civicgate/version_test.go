package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestVersionCommand: the built binary's `version` names civicgate with the
// commit it was built from, then Caddy and Go.
func TestVersionCommand(t *testing.T) {
	bin := binary
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 3 {
			t.Fatalf("%s: %q", arg, out)
		}
		if !strings.HasPrefix(lines[0], "civicgate ") || !strings.Contains(lines[0], " commit "+strings.TrimSpace(string(head))) {
			t.Fatalf("%s: first line %q, want civicgate and commit %s", arg, lines[0], head)
		}
		if !regexp.MustCompile(`^caddy v2\.\d+\.\d+`).MatchString(lines[1]) {
			t.Fatalf("%s: second line %q", arg, lines[1])
		}
		if lines[2] != runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
			t.Fatalf("%s: third line %q", arg, lines[2])
		}
	}
}

func TestIsVersionCommand(t *testing.T) {
	for args, want := range map[string]bool{"version": true, "--version": true, "-v": true, "version x": false, "run": false, "": false} {
		if got := isVersionCommand(strings.Fields(args)); got != want {
			t.Errorf("%q: %v", args, got)
		}
	}
	var b bytes.Buffer
	printVersion(&b)
	if !strings.HasPrefix(b.String(), "civicgate ") {
		t.Fatalf("%q", b.String())
	}
}
