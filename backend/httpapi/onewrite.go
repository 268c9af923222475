package httpapi

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// One write per response (docs/design.md D59). net/http sends a response through a 4 KiB buffer in front of the
// connection: a page of 5–10 KB leaves in two write(2) calls (the header with the body's first bytes, then the
// rest when the handler returns), and on loopback each write costs the writer the receiver's side of the TCP
// stack and a wake-up of the reader. A connection served through ConfigureServer holds what net/http writes while a
// response is being produced and sends it in one write when the handler is done; nothing else changes: the same
// bytes, the same deadlines, the same errors.

// heldMax bounds what one response holds: a larger body gains nothing from one write less and would be copied
// whole, so past it the held bytes go out and the rest is written through.
const heldMax = 64 << 10

// ConfigureServer makes srv hand each connection of ln to the handler, so that a response can leave in one
// write, and returns the listener to serve: srv.Serve(ConfigureServer(srv, ln)). A handler on any other
// connection (httptest, another listener) writes as net/http does.
func ConfigureServer(srv *http.Server, ln net.Listener) net.Listener {
	prev := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prev != nil {
			ctx = prev(ctx, c)
		}
		if hc, ok := c.(*heldConn); ok {
			ctx = context.WithValue(ctx, heldConnKey{}, hc)
		}
		return ctx
	}
	return heldListener{ln}
}

type heldConnKey struct{}

type heldListener struct{ net.Listener }

func (l heldListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &heldConn{Conn: c}, nil
}

// heldConn is an accepted connection that holds writes between hold and release. Only the connection's serving
// goroutine writes an HTTP/1 response (the handler runs in it), so hold, Write and release never race; the
// background reader net/http runs during a handler only reads, and Close (any goroutine) leaves the state alone.
type heldConn struct {
	net.Conn
	held bool
	buf  *[]byte
}

var heldBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func (c *heldConn) hold() {
	c.held = true
}

func (c *heldConn) Write(p []byte) (int, error) {
	if !c.held {
		return c.Conn.Write(p)
	}
	if c.buf == nil {
		c.buf = heldBuffers.Get().(*[]byte)
	}
	if len(*c.buf)+len(p) > heldMax {
		if err := c.release(); err != nil {
			return 0, err
		}
		return c.Conn.Write(p)
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

// release stops holding and writes what was held, in one write.
func (c *heldConn) release() error {
	c.held = false
	if c.buf == nil {
		return nil
	}
	b := c.buf
	c.buf = nil
	var err error
	if len(*b) > 0 {
		_, err = c.Conn.Write(*b)
	}
	if cap(*b) <= heldMax*2 {
		*b = (*b)[:0]
		heldBuffers.Put(b)
	}
	return err
}

// CloseWrite half-closes as net/http asks of a TCP connection (closeWriteAndWait).
//
// Neither CloseWrite nor Close touches what is held: both run either in the serving goroutine after oneWrite
// has released the response (net/http ending a connection it will not reuse) or in another goroutine closing
// the connection outright (http.Server.Close, Shutdown's idle sweep), where a held response is abandoned with
// the connection and reading hold's state would race with the serving goroutine.
func (c *heldConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// oneWrite holds the connection's writes while next produces the response and sends them in one write once it
// is done. Only a response that declared its length is flushed here: flushing one that did not would make
// net/http send it chunked instead of counting its length as it ends. Every recordsd body declares it
// (writeGraphQL, bodyWriter).
//
// A request carrying Expect is not held: net/http writes its interim "100 Continue" when the handler first reads
// the body, and the client sends the body only once that arrives (or its own timeout passes), so a held 100
// would stall the request. net/http answers any other expectation with 417 before a handler runs, so every
// Expect that reaches here is 100-continue.
func oneWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(heldConnKey{}).(*heldConn)
		if _, expect := r.Header["Expect"]; !ok || r.ProtoMajor != 1 || expect {
			next.ServeHTTP(w, r)
			return
		}
		c.hold()
		defer func() {
			if _, declared := w.Header()["Content-Length"]; declared {
				_ = http.NewResponseController(w).Flush()
			}
			if err := c.release(); err != nil {
				// net/http took the bytes as written: closing makes its next read on the connection fail,
				// so it is not reused after a response that did not leave whole.
				_ = c.Conn.Close()
			}
		}()
		next.ServeHTTP(w, r)
	})
}
