package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingListener counts the write(2)-level writes of every connection it accepts and can make them fail.
type countingListener struct {
	net.Listener
	mu     sync.Mutex
	writes []int // sizes, in order
	fail   bool
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{TCPConn: c.(*net.TCPConn), l: l}, nil
}

func (l *countingListener) take() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.writes
	l.writes = nil
	return w
}

type countingConn struct {
	*net.TCPConn
	l *countingListener
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes = append(c.l.writes, len(p))
	fail := c.l.fail
	c.l.mu.Unlock()
	if fail {
		return 0, errors.New("injected write failure")
	}
	return c.TCPConn.Write(p)
}

// serveOneWrite serves h as recordsd does (oneWrite outermost, ConfigureServer's listener) over a counting
// listener; it returns the listener and a keep-alive connection to it.
func serveOneWrite(t *testing.T, h http.Handler) (*countingListener, net.Conn, *bufio.Reader) {
	t.Helper()
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: base}
	srv := &http.Server{Handler: oneWrite(h)}
	ln := ConfigureServer(srv, cl)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return cl, conn, bufio.NewReader(conn)
}

func roundTrip(t *testing.T, conn net.Conn, br *bufio.Reader, method, path string) (*http.Response, []byte) {
	t.Helper()
	if _, err := io.WriteString(conn, method+" "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// body answers /n/<size> with size bytes and its length declared, /chunked/<size> without it.
func sizedBodies(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.URL.Path, "/")
	n, _ := strconv.Atoi(parts[len(parts)-1])
	b := bytes.Repeat([]byte("abcdefghij"), n/10+1)[:n]
	if parts[1] == "n" {
		w.Header()["Content-Length"] = []string{strconv.Itoa(n)}
	}
	for len(b) > 0 { // several handler writes, as a writer with a small buffer would make
		k := min(len(b), 3000)
		_, _ = w.Write(b[:k])
		b = b[k:]
	}
}

// TestOneWritePerResponse: a response that declares its length leaves in one write whatever its size up to
// heldMax, over a kept-alive connection; larger and undeclared ones arrive whole as net/http sends them.
func TestOneWritePerResponse(t *testing.T) {
	cl, conn, br := serveOneWrite(t, http.HandlerFunc(sizedBodies))
	for _, n := range []int{0, 21, 4000, 4096, 7700, 30000, heldMax - 512} {
		resp, body := roundTrip(t, conn, br, "GET", "/n/"+strconv.Itoa(n))
		if len(body) != n || resp.ContentLength != int64(n) || resp.TransferEncoding != nil {
			t.Fatalf("size %d: got %d bytes, Content-Length %d, Transfer-Encoding %v", n, len(body), resp.ContentLength, resp.TransferEncoding)
		}
		if w := cl.take(); len(w) != 1 {
			t.Errorf("size %d: %d writes %v, want one", n, len(w), w)
		}
	}
	// Past heldMax the held bytes go out and the rest is written through: more than one write, every byte.
	n := 3 * heldMax
	if _, body := roundTrip(t, conn, br, "GET", "/n/"+strconv.Itoa(n)); len(body) != n || !bytes.Equal(body, bytes.Repeat([]byte("abcdefghij"), n/10+1)[:n]) {
		t.Fatalf("large body: got %d bytes or other bytes", len(body))
	}
	if w := cl.take(); len(w) < 2 {
		t.Errorf("large body: %v writes, want the held part and the rest", w)
	}
	// Undeclared length: net/http chooses the framing as it always did (chunked here), never flushed early.
	resp, body := roundTrip(t, conn, br, "GET", "/chunked/9000")
	if len(body) != 9000 || len(resp.TransferEncoding) != 1 {
		t.Fatalf("chunked: %d bytes, Transfer-Encoding %v", len(body), resp.TransferEncoding)
	}
	cl.take()
	resp, body = roundTrip(t, conn, br, "HEAD", "/n/7700")
	if len(body) != 0 || resp.ContentLength != 7700 {
		t.Fatalf("HEAD: %d bytes, Content-Length %d", len(body), resp.ContentLength)
	}
	if w := cl.take(); len(w) != 1 {
		t.Errorf("HEAD: %d writes %v, want one", len(w), w)
	}
}

// TestOneWriteFailedWriteEndsTheConnection: when the held response cannot be written, the connection is not
// reused for another response; the client sees it end instead of waiting on it.
func TestOneWriteFailedWriteEndsTheConnection(t *testing.T) {
	cl, conn, br := serveOneWrite(t, http.HandlerFunc(sizedBodies))
	roundTrip(t, conn, br, "GET", "/n/100")
	cl.mu.Lock()
	cl.fail = true
	cl.mu.Unlock()
	if _, err := io.WriteString(conn, "GET /n/7700 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// A connection left open would block the reads below; the deadline turns that into a failure.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Fatal("a response arrived through a connection whose writes fail")
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection did not end after its response failed to leave: %v", err)
	}
}

// TestOneWriteAbortedHandler: a handler that aborts mid-response (http.ErrAbortHandler) leaves nothing held
// and the connection closed.
func TestOneWriteAbortedHandler(t *testing.T) {
	_, conn, br := serveOneWrite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Length"] = []string{"10"}
		_, _ = w.Write([]byte("abcde"))
		panic(http.ErrAbortHandler)
	}))
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("reading until the server closed: %v", err)
	}
	if bytes.Contains(rest, []byte("abcdeabcde")) {
		t.Fatalf("more than the handler wrote: %q", rest)
	}
}

// TestOneWriteOnOtherConnections: a handler served without ConfigureServer (httptest, another listener)
// writes as net/http does.
func TestOneWriteOnOtherConnections(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: base}
	srv := &http.Server{Handler: oneWrite(http.HandlerFunc(sizedBodies))}
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	if _, body := roundTrip(t, conn, br, "GET", "/n/7700"); len(body) != 7700 {
		t.Fatalf("got %d bytes", len(body))
	}
	if w := cl.take(); len(w) != 2 {
		t.Errorf("%d writes %v: net/http's own framing sends a 7700-byte body in two", len(w), w)
	}
}

// TestOneWritePipelined: requests sent back to back in one packet (HTTP/1.1 pipelining) get their responses
// whole and in order, each in one write.
func TestOneWritePipelined(t *testing.T) {
	cl, conn, br := serveOneWrite(t, http.HandlerFunc(sizedBodies))
	sizes := []int{7700, 10, 20000}
	var reqs strings.Builder
	for _, n := range sizes {
		reqs.WriteString("GET /n/" + strconv.Itoa(n) + " HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	if _, err := io.WriteString(conn, reqs.String()); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for _, n := range sizes {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || len(body) != n {
			t.Fatalf("response for %d bytes: %d bytes, %v", n, len(body), err)
		}
	}
	if w := cl.take(); len(w) != len(sizes) {
		t.Errorf("%d writes %v for %d pipelined responses, want one each", len(w), w, len(sizes))
	}
}

// TestOneWriteServerCloseMidResponse: the server closing every connection from another goroutine while a
// response is held (http.Server.Close; Shutdown's idle sweep is the same call) abandons it without touching the
// serving goroutine's state (run under -race) and without sending a partial response.
func TestOneWriteServerCloseMidResponse(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inHandler, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: oneWrite(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Length"] = []string{"7700"}
		_, _ = w.Write(bytes.Repeat([]byte("a"), 5000)) // past net/http's buffer: held by the connection
		close(inHandler)
		<-release
		_, _ = w.Write(bytes.Repeat([]byte("a"), 2700))
	}))}
	ln := ConfigureServer(srv, base)
	go func() { _ = srv.Serve(ln) }()
	conn, err := net.Dial("tcp", base.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-inHandler
	_ = srv.Close()
	close(release)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading until the server closed: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("%d bytes of an abandoned response reached the client", len(got))
	}
}
