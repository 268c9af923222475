package stack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
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

// Remove deletes the built binaries.
func (b *Binaries) Remove() {
	if b.Dir != "" {
		_ = os.RemoveAll(b.Dir)
	}
}
