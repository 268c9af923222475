package wsproxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// responseWriter is the ResponseWriter graphql_guard hands to
// reverse_proxy: its Hijack returns the filtering connection. Flush, Push,
// ReadFrom and Unwrap (for http.ResponseController) come from the
// embedded wrapper.
type responseWriter struct {
	*caddyhttp.ResponseWriterWrapper
	req *http.Request
	cfg Config
}

// WrapResponseWriter returns w wrapped so that Hijack returns the filtering
// conn. It also rewrites r's Sec-WebSocket-Protocol header to offer
// Subprotocol alone and drops Sec-WebSocket-Extensions, so that the
// upstream cannot pick another protocol or a compression the filter does
// not read; call it before handing r to reverse_proxy.
func WrapResponseWriter(w http.ResponseWriter, r *http.Request, cfg Config) http.ResponseWriter {
	offerOnlySubprotocol(r)
	return &responseWriter{
		ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w},
		req:                   r,
		cfg:                   cfg,
	}
}

// Hijack hijacks the underlying connection, sends the pending response
// (the 101) and returns the filtering conn. The bytes the server had
// already read past the request go through the filter first: the returned
// ReadWriter's Reader has nothing buffered, so reverse_proxy cannot pass
// them to the upstream unfiltered.
func (rw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	//nolint:bodyclose // not a client response
	raw, brw, err := http.NewResponseController(rw.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("wsproxy: hijacking the connection: %w", err)
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = raw.Close()
		return nil, nil, fmt.Errorf("wsproxy: sending the switching protocols response: %w", err)
	}
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ := brw.Reader.Peek(n) // n bytes are buffered: no error
		early = append([]byte(nil), buffered...)
	}
	fc := newFilterConn(rw.req.Context(), raw, early, rw.cfg)
	return fc, bufio.NewReadWriter(bufio.NewReaderSize(fc, 16), bufio.NewWriterSize(fc, 1)), nil
}
