package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// reservePort takes an exclusive advisory lock on a file named after port in
// a directory every test process shares, so test binaries running in
// parallel (one per package) never hand out the same port at once. The lock
// belongs to the open file: it ends with release or with the process, so a
// killed test leaves nothing held. ok is false when another process holds the
// port (or the lock cannot be taken at all, which only costs a draw).
func reservePort(port int) (release func(), ok bool) {
	dir := filepath.Join(os.TempDir(), "civicgate-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return func() { _ = f.Close() }, true
}
