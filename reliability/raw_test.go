package reliability

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// rawResponse is what a hand-written request got.
type rawResponse struct {
	status  int
	header  http.Header
	body    string
	elapsed time.Duration
}

// dialTLS opens a TLS connection to the stack's gateway offering one ALPN
// protocol, trusting the stack's local CA.
func dialTLS(s *stack.Stack, proto string) (*tls.Conn, error) {
	tr, ok := s.Client.Transport.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("stack client transport is %T", s.Client.Transport)
	}
	cfg := tr.TLSClientConfig.Clone()
	cfg.ServerName = "localhost"
	cfg.NextProtos = []string{proto}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", strings.TrimPrefix(s.HTTPSURL, "https://"), cfg)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	return conn, nil
}

// rawDo writes head (request line and headers, CRLF-terminated, without the
// blank line) and then the body — bytes as given, or streamed by stream — to
// the gateway over TLS (HTTP/1.1, exactly these bytes: no client-side
// normalisation), and reads one response. The whole exchange is bounded by
// within. A stream's write error after the response has started (the server
// closed early, as it should on an oversized body) is not a failure.
func rawDo(s *stack.Stack, head string, body []byte, stream func(io.Writer) error, within time.Duration) (rawResponse, error) {
	start := time.Now()
	conn, err := dialTLS(s, "http/1.1")
	if err != nil {
		return rawResponse{}, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(start.Add(within)); err != nil {
		return rawResponse{}, fmt.Errorf("deadline: %w", err)
	}
	writeErr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(conn, 64<<10)
		_, err := w.WriteString(head + "\r\n")
		if err == nil && body != nil {
			_, err = w.Write(body)
		}
		if err == nil {
			err = w.Flush()
		}
		if err == nil && stream != nil {
			err = stream(conn)
		}
		writeErr <- err
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		werr := <-writeErr
		return rawResponse{elapsed: time.Since(start)}, fmt.Errorf("read response after %s: %w (write: %v)", time.Since(start).Round(time.Millisecond), err, werr)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return rawResponse{}, fmt.Errorf("read body: %w", err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b), elapsed: time.Since(start)}, nil
}
