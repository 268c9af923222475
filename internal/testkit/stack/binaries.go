package stack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// RepoRoot is the repository's top directory (this file's parent's parent).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file))))
}

// SharedBinDirEnv names a directory that the test processes of one run share
// their builds of civicgate and recordsd through: `make test` sets it to a
// fresh directory and removes it afterwards, so e2e, reliability, the example
// backend and civic_auth's second-instance test link each binary once per run
// instead of once per package (a race build of civicgate takes about 30 s on
// two cores). Unset, each test binary builds its own copy.
const SharedBinDirEnv = "CIVICGATE_TEST_BINDIR"

// Binaries builds civicgate and recordsd once per test binary run, into a
// temporary directory that Remove deletes (call it from TestMain), or once per
// `make test` run into SharedBinDirEnv. Under `go test -race` they are
// race-detector builds, and a process that reports a data race fails the test
// that started it (see SpawnProc).
type Binaries struct {
	mu        sync.Mutex
	Dir       string
	owned     bool            // Dir is this process's own: Remove deletes it
	built     map[string]bool // the names built into Dir
	Civicgate string
	Recordsd  string
}

// Build compiles both binaries the first time it is called.
func (b *Binaries) Build(t testing.TB) {
	t.Helper()
	b.build(t, "civicgate", "recordsd")
}

// BuildCivicgate compiles civicgate only, for a test that runs no recordsd.
func (b *Binaries) BuildCivicgate(t testing.TB) {
	t.Helper()
	b.build(t, "civicgate")
}

func (b *Binaries) build(t testing.TB, names ...string) {
	t.Helper()
	// Compiling the binaries (with -race under make test) is the whole-stack
	// tier's cost, tens of seconds after any change: make check's -short tier
	// leaves it, and every test that needs the binaries, to make test.
	if testing.Short() {
		t.Skip("needs the built civicgate and recordsd binaries: run by make test, skipped by make check (-short)")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Dir == "" {
		if shared := os.Getenv(SharedBinDirEnv); shared != "" {
			b.Dir = filepath.Join(shared, buildFlavour())
		} else {
			dir, err := os.MkdirTemp("", "civicgate-e2e-bin-")
			if err != nil {
				t.Fatal(err)
			}
			b.Dir, b.owned = dir, true
		}
		b.built = map[string]bool{}
		b.Civicgate = filepath.Join(b.Dir, "civicgate")
		b.Recordsd = filepath.Join(b.Dir, "recordsd")
	}
	for _, name := range names {
		if b.built[name] {
			continue
		}
		var err error
		if b.owned {
			err = build(RepoRoot(t), b.Dir, name)
		} else {
			err = buildShared(RepoRoot(t), b.Dir, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		b.built[name] = true
	}
}

// Remove deletes the built binaries, unless they are shared with the other
// test processes of the run (their directory is the Makefile's to remove).
func (b *Binaries) Remove() {
	if b.owned {
		_ = os.RemoveAll(b.Dir)
	}
}

// buildFlavour names the shared subdirectory of this test binary's builds:
// race and plain builds of one run must not replace each other.
func buildFlavour() string {
	if raceBuild {
		return "race"
	}
	return "plain"
}

// buildShared builds the named binary into dir unless another test process
// of the run already did: an exclusive lock on dir/<name>.lock makes the
// others wait for the first build instead of starting their own, and
// dir/<name>.done marks a complete one (a build that failed is tried again by
// the next process).
func buildShared(root, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("shared binaries: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("shared binaries: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("shared binaries: lock %s: %w", dir, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	done := filepath.Join(dir, name+".done")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	if err := build(root, dir, name); err != nil {
		return err
	}
	return os.WriteFile(done, nil, 0o644)
}

// build compiles ./cmd/<name> into dir, with -race when this test binary
// runs under the race detector.
func build(root, dir, name string) error {
	args := []string{"build", "-o", filepath.Join(dir, name)}
	if raceBuild {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/"+name)...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, msg)
	}
	return nil
}
