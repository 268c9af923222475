package testhydra

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// buildTags turn on Hydra's SQLite support (cgo, mattn/go-sqlite3): without
// them the binary refuses every sqlite:// DSN, memory included. They are the
// tags Hydra's own -sqlite release builds use.
const buildTags = "sqlite,sqlite_omit_load_extension"

// hydraModule is the main package built from tools/hydra.
const hydraModule = "github.com/ory/hydra/v2"

// CacheDirEnv overrides where built Hydra binaries are kept (default: the
// user's cache directory, ~/.cache/civicgate-testhydra).
const CacheDirEnv = "CIVICGATE_TEST_HYDRA_CACHE"

var (
	binMu   sync.Mutex
	binPath string // this process's answer, once found or built
)

// Binary returns the path of a Hydra binary built from tools/hydra, building
// it if no build of the same inputs exists yet.
//
// Unlike civicgate and recordsd (internal/testkit/stack), Hydra does not change with
// the working tree: a build depends only on tools/hydra/go.mod and go.sum,
// the Go version, the platform and the build flags, all of which name the
// cache entry. So the binary is kept across runs in a per-user cache rather
// than in CIVICGATE_TEST_BINDIR, which `make test` makes anew on every run
// and would cost a relink of a 55 MB cgo binary each time. The cache is
// shared by every test process of a run through a lock: the first one builds,
// the others wait for it. When the cache cannot be created the build goes to
// CIVICGATE_TEST_BINDIR, or else to a temporary directory of this process.
func Binary(t testing.TB) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if binPath != "" {
		return binPath
	}
	root := stack.RepoRoot(t)
	key, err := buildKey(root)
	if err != nil {
		t.Fatalf("testhydra: %v", err)
	}
	dir, err := cacheDir(key)
	if err != nil {
		t.Fatalf("testhydra: %v", err)
	}
	path, err := buildLocked(root, dir)
	if err != nil {
		t.Fatalf("testhydra: %v", err)
	}
	binPath = path
	return binPath
}

// buildKey names a build by everything it is made from.
func buildKey(root string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, "tools", "hydra", name))
		if err != nil {
			return "", fmt.Errorf("read the tool module: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	// The test binary was built by the go command that builds Hydra
	// (GOTOOLCHAIN=local here), so its version stands for that one's.
	fmt.Fprintf(h, "%s %s/%s tags=%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, buildTags)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// cacheDir returns the directory of the build named key, created.
func cacheDir(key string) (string, error) {
	base := os.Getenv(CacheDirEnv)
	if base == "" {
		if c, err := os.UserCacheDir(); err == nil {
			base = filepath.Join(c, "civicgate-testhydra")
		}
	}
	if base != "" {
		dir := filepath.Join(base, key)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir, nil
		}
	}
	if shared := os.Getenv(stack.SharedBinDirEnv); shared != "" {
		dir := filepath.Join(shared, "hydra-"+key)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("binary directory: %w", err)
		}
		return dir, nil
	}
	dir, err := os.MkdirTemp("", "civicgate-testhydra-")
	if err != nil {
		return "", fmt.Errorf("binary directory: %w", err)
	}
	return dir, nil
}

// buildLocked builds dir/hydra unless it exists, holding dir/build.lock so
// that concurrent test processes build it once. The binary is linked under a
// temporary name and renamed, so its existence means a complete build.
func buildLocked(root, dir string) (string, error) {
	bin := filepath.Join(dir, "hydra")
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("build lock %s: %w", dir, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	defer os.Remove(tmp)
	if err := build(root, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("install the hydra binary: %w", err)
	}
	return bin, nil
}

// build runs go build in the tool module, which keeps Hydra's few hundred
// modules out of the product's module graph (tools/hydra/go.mod).
func build(root, out string) error {
	toolDir := filepath.Join(root, "tools", "hydra")
	version, err := hydraVersion(filepath.Join(toolDir, "go.mod"))
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-C", toolDir,
		"-tags", buildTags,
		"-buildvcs=false",
		"-ldflags", "-X github.com/ory/hydra/v2/driver/config.Version="+version,
		"-o", out, hydraModule)
	// GOWORK=off: a go.work above the repository must not pull the tool module
	// into another build list. CGO_ENABLED=1: SQLite is a cgo package.
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=1")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -C tools/hydra %s: %w\n%s", hydraModule, err, msg)
	}
	return nil
}

// hydraVersion reads the required version of Hydra from the tool module's
// go.mod, for the version Hydra logs and reports.
func hydraVersion(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", gomod, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == hydraModule && strings.HasPrefix(f[1], "v") {
			return f[1], nil
		}
		if len(f) >= 3 && f[0] == "require" && f[1] == hydraModule {
			return f[2], nil
		}
	}
	return "", fmt.Errorf("%s requires no %s", gomod, hydraModule)
}
