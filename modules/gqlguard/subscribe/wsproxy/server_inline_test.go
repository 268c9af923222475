//go:build unix

package wsproxy

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// TestNonBlockingWriterNeverWaits: against a peer that does not read, the
// writer reports what the kernel took, down to 0 once its buffers are full,
// instead of waiting; once the peer reads, everything written arrives in
// order; and a write allocates nothing (it runs once per delivered event).
func TestNonBlockingWriterNeverWaits(t *testing.T) {
	client, server := tcpPair(t)
	write := nonBlockingWriter(server)
	if write == nil {
		t.Fatal("no non-blocking writer for a TCP connection")
	}
	one := []byte("x")
	if n := testing.AllocsPerRun(50, func() { _, _ = write(one) }); n != 0 {
		t.Errorf("a write allocates %v times", n)
	}
	var sent bytes.Buffer
	sent.WriteString(string(bytes.Repeat([]byte("x"), 51))) // what AllocsPerRun wrote (51 runs)
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if i > 10_000 {
			t.Fatal("the kernel never stopped taking bytes")
		}
		for j := range chunk {
			chunk[j] = byte('a' + (i+j)%26)
		}
		n, err := write(chunk)
		if err != nil {
			t.Fatal(err)
		}
		sent.Write(chunk[:n])
		if n == 0 {
			break // full: reported, not waited for
		}
	}
	got := make([]byte, sent.Len())
	closed := make(chan struct{})
	go func() { _ = server.Close(); close(closed) }()
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatalf("reading what was written: %v", err)
	}
	if !bytes.Equal(got, sent.Bytes()) {
		t.Fatal("the bytes read differ from the bytes the writer reported taken")
	}
	<-closed // the read may finish before the close has run
	if _, err := write([]byte("after close")); err == nil {
		t.Error("a write to a closed connection reported no error")
	}
}

// TestNonBlockingWriterOnlyForSockets: a connection without a socket of its
// own (a pipe; TLS in the gateway) gets none, and neither does a wrapper
// around a TCP connection (a listener wrapper's Write must not be bypassed):
// their frames go through the writer goroutine.
func TestNonBlockingWriterOnlyForSockets(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if nonBlockingWriter(a) != nil {
		t.Error("a pipe got a non-blocking writer")
	}
	c, _ := tcpPair(t)
	if nonBlockingWriter(countingConn{c.(*net.TCPConn)}) != nil {
		t.Error("a wrapper embedding *net.TCPConn got a non-blocking writer")
	}
}

// countingConn is a listener wrapper of the kind Caddy modules write: it
// embeds the TCP connection (and so its SyscallConn) and has a Write of its
// own.
type countingConn struct{ *net.TCPConn }

func (c countingConn) Write(b []byte) (int, error) { return c.TCPConn.Write(b) }

// tcpPair is a connected pair of loopback TCP connections, closed with t.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return client, server
}
