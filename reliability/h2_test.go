package reliability

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestHTTP2Abuse: clients reach the gateway over TLS with ALPN, so most speak
// HTTP/2. The corpus of hostile_test.go is HTTP/1.1 bytes; these are HTTP/2
// frames written by hand: the exact error bodies over h2, a rapid-reset flood
// (CVE-2023-44487) and a CONTINUATION flood (CVE-2024-27316's class). After
// each the gateway still serves, and no log holds a key or a panic.
func TestHTTP2Abuse(t *testing.T) {
	t.Parallel()
	// Two keys: the floods use keys[1]. Every stream of the rapid reset that
	// reaches the handlers before its RST_STREAM is charged to its key, and on
	// a loaded machine that is enough of the 5000 to spend an enterprise
	// quota — the limiter working, not the gateway failing — so "still serves"
	// is asked with a key the floods did not spend (keys[0]).
	e := start(t, 2)
	flood := e.keys[1]

	t.Run("error bodies over h2", func(t *testing.T) {
		tr := e.s.Client.Transport.(*http.Transport).Clone()
		tr.ForceAttemptHTTP2 = true
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		for _, tc := range []struct {
			key, body string
			status    int
			want      string
		}{
			{"", `{"query":"{ __typename }"}`, 401, `{"error":"Missing bearer token"}`},
			{e.enterprise, `{"query":"{ bills { nextCursr } }"}`, 200,
				`{"data":null,"errors":[{"message":"Cannot query field \"nextCursr\" on type \"BillsPage\". Did you mean \"nextCursor\"?","locations":[{"line":1,"column":11}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
			{e.enterprise, `{"query":"{ __typename }"}`, 200, `{"data":{"__typename":"Query"}}`},
		} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.s.HTTPSURL+"/v1/graphql", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != tc.status || string(b) != tc.want {
				t.Errorf("%s: %d %s, want HTTP/2 %d %s", resp.Proto, resp.StatusCode, b, tc.status, tc.want)
			}
		}
	})

	t.Run("rapid reset", func(t *testing.T) {
		// 5000 streams, each opened and cancelled at once: the server must
		// not keep one handler per cancelled stream, and must stay up.
		c := dialH2(t, e)
		defer c.close()
		for i := range 5000 {
			id := uint32(2*i + 1)
			if err := c.headers(id, flood, false); err != nil {
				t.Logf("the server closed the connection after %d streams: %v", i, err)
				break
			}
			if err := c.fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
				t.Logf("the server closed the connection after %d streams: %v", i, err)
				break
			}
		}
		c.drain(5 * time.Second)
		checkServes(t, e)
	})

	t.Run("CONTINUATION flood", func(t *testing.T) {
		// A header block that never ends: HEADERS without END_HEADERS, then
		// CONTINUATION frames. The server must give up on it (the gateway
		// allows 16 KB of headers) long before 10 MB, not buffer it.
		c := dialH2(t, e)
		defer c.close()
		block := c.encode(flood)
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: false}); err != nil {
			t.Fatal(err)
		}
		var field bytes.Buffer // one valid, never-indexed header field of 4 KB
		_ = hpack.NewEncoder(&field).WriteField(hpack.HeaderField{Name: "x-flood", Value: strings.Repeat("a", 4096), Sensitive: true})
		chunk := bytes.Repeat(field.Bytes(), 3) // ≈ 12 KB per CONTINUATION frame (frames stay under 16 KB)
		sent := 0
		var werr error
		for sent < 10<<20 {
			if werr = c.fr.WriteContinuation(1, false, chunk); werr != nil {
				break
			}
			sent += len(chunk)
		}
		if werr == nil {
			// Everything was written (the kernel buffers): the server must have
			// answered with GOAWAY or closed the connection by now.
			if !c.drain(5 * time.Second) {
				t.Fatalf("10 MB of CONTINUATION accepted and the connection still open")
			}
		}
		if sent >= 10<<20 && werr == nil && !c.sawGoAway {
			t.Fatalf("no GOAWAY and no close after %d bytes of header block", sent)
		}
		t.Logf("the server stopped the header block after ≤ %d bytes (GOAWAY seen: %v)", sent, c.sawGoAway)
		checkServes(t, e)
	})

	e.s.CheckLogs(t, e.keys...)
}

// h2conn is a raw HTTP/2 client connection.
type h2conn struct {
	t         *testing.T
	conn      net.Conn
	fr        *http2.Framer
	enc       *hpack.Encoder
	buf       bytes.Buffer
	host      string
	sawGoAway bool
}

func dialH2(t *testing.T, e *env) *h2conn {
	t.Helper()
	conn, err := dialTLS(e.s, "h2")
	if err != nil {
		t.Fatal(err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		conn.Close()
		t.Fatalf("ALPN chose %q, want h2", p)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &h2conn{t: t, conn: conn, fr: http2.NewFramer(conn, conn), host: strings.TrimPrefix(e.s.HTTPSURL, "https://")}
	c.enc = hpack.NewEncoder(&c.buf)
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// A server that stops reading must not hang the test: writes fail instead.
	_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return c
}

// encode is the header block of an authorised POST /v1/graphql.
func (c *h2conn) encode(key string) []byte {
	c.buf.Reset()
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: c.host}, {Name: ":path", Value: "/v1/graphql"},
		{Name: "content-type", Value: "application/json"}, {Name: "authorization", Value: "Bearer " + key},
	} {
		_ = c.enc.WriteField(f)
	}
	return append([]byte(nil), c.buf.Bytes()...)
}

func (c *h2conn) headers(id uint32, key string, end bool) error {
	return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.encode(key), EndHeaders: true, EndStream: end})
}

// drain reads frames until the connection closes, a GOAWAY arrives or d
// passes; it reports whether the server ended the connection.
func (c *h2conn) drain(d time.Duration) bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return false
			}
			return true // closed (EOF, reset)
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			c.sawGoAway = true
			return true
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = c.fr.WritePing(true, f.Data)
			}
		}
	}
}

func (c *h2conn) close() { _ = c.conn.Close() }
