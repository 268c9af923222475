//go:build unix

package wsproxy

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// nonBlockingWriter returns a write(2) on conn's socket that never waits: it
// reports how much the kernel took (0 when its buffer is full) and fails
// only when the socket does. nil for anything but a bare TCP connection: TLS
// (a record cannot be half written and resumed), and any listener wrapper,
// whose own Write a write to the socket would bypass.
func nonBlockingWriter(conn net.Conn) func([]byte) (int, error) {
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return nil
	}
	w := &rawWriter{rc: rc}
	w.attempt = w.writeOnce // made once: a closure per write was an allocation per delivered message
	return w.write
}

// rawWriter is one socket's non-blocking writer. Its fields are per call;
// the socket's writer role (serverConn.flushing) keeps calls one at a time.
type rawWriter struct {
	rc      syscall.RawConn
	attempt func(fd uintptr) bool
	b       []byte
	n       int
	err     error
}

func (w *rawWriter) writeOnce(fd uintptr) bool {
	w.n, w.err = syscall.Write(int(fd), w.b)
	return true // never wait for room: what is left is the writer goroutine's
}

func (w *rawWriter) write(b []byte) (int, error) {
	w.b = b
	err := w.rc.Write(w.attempt)
	n, werr := w.n, w.err
	w.b, w.err = nil, nil
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil // a deadline the writer goroutine set and passed: it sets its own
	case err != nil:
		return 0, err
	case errors.Is(werr, syscall.EAGAIN), errors.Is(werr, syscall.EINTR):
		return 0, nil
	case werr != nil:
		return 0, werr
	}
	return n, nil
}
