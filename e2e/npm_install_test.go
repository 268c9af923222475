package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// npmInstall copies e2e/<folder> (package.json, its lock, the *.mjs
// scripts and the *.yaml files they read) into a directory of the test's own and installs the locked
// packages there with `npm ci`: node or npm missing, or npm failing, fails
// the test (what names the packages it installs), never skips it.
func npmInstall(t *testing.T, folder, what string) string {
	t.Helper()
	// npm ci takes seconds to minutes, for tests that then need the whole
	// stack: make check's -short tier leaves them to make test.
	if testing.Short() {
		t.Skip("installs npm packages for a whole-stack test: run by make test, skipped by make check (-short)")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: %s need Node.js 20 or later and npm", tool, what)
		}
	}
	src := filepath.Join(stack.RepoRoot(t), "e2e", folder)
	files, err := filepath.Glob(filepath.Join(src, "*.mjs"))
	yamls, _ := filepath.Glob(filepath.Join(src, "*.yaml"))
	if files = append(files, yamls...); err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", src, err)
	}
	files = append(files, filepath.Join(src, "package.json"), filepath.Join(src, "package-lock.json"))
	dir := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci of e2e/%s failed (%v): %s could not be installed — is the npm registry reachable?\n%s",
			folder, err, what, tailLines(out, 30))
	}
	return dir
}
