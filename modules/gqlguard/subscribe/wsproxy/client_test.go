package wsproxy

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// wsClient is a raw RFC 6455 client: the tests need to send what a library
// would refuse to (fragments, pipelined frames, oversized announcements).
type wsClient struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// upgradeRequest is the handshake offering graphql-transport-ws.
func upgradeRequest(host string) []byte {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	return fmt.Appendf(nil, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: %s\r\n\r\n",
		host, base64.StdEncoding.EncodeToString(key), Subprotocol)
}

// dial upgrades a connection to the proxy; pipelined is written in the same
// TCP write as the upgrade request.
func dial(t *testing.T, addr string, pipelined ...[]byte) *wsClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := upgradeRequest(addr)
	for _, p := range pipelined {
		req = append(req, p...)
	}
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: status %d", res.StatusCode)
	}
	if got := res.Header.Get("Sec-Websocket-Protocol"); got != Subprotocol {
		t.Fatalf("upgrade: subprotocol %q", got)
	}
	return &wsClient{t: t, conn: conn, br: br}
}

// frame encodes one masked client frame.
func frame(op byte, fin bool, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= finBit
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	hdr := appendFrameHeader(nil, op, len(payload), &key)
	hdr[0] = b0
	start := len(hdr)
	out := append(hdr, payload...)
	maskBytes(key, 0, out[start:])
	return out
}

func text(msg string) []byte { return frame(opText, true, []byte(msg)) }

func (c *wsClient) send(b ...[]byte) {
	c.t.Helper()
	for _, f := range b {
		if _, err := c.conn.Write(f); err != nil {
			c.t.Fatalf("send: %v", err)
		}
	}
}

func (c *wsClient) sendText(msg string) { c.t.Helper(); c.send(text(msg)) }

// readFrame reads one server frame (unmasked, final).
func (c *wsClient) readFrame() (op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(c.br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var l [2]byte
		if _, err = io.ReadFull(c.br, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err = io.ReadFull(c.br, l[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(c.br, payload)
	return h[0] & 0x0F, payload, err
}

// serverMessage is a decoded graphql-transport-ws server message.
type serverMessage struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// next returns the next text message, skipping WebSocket pings; a close
// frame fails the test.
func (c *wsClient) next() serverMessage {
	c.t.Helper()
	for {
		op, p, err := c.readFrame()
		if err != nil {
			c.t.Fatalf("reading a message: %v", err)
		}
		switch op {
		case opText:
			var m serverMessage
			if err := json.Unmarshal(p, &m); err != nil {
				c.t.Fatalf("server message %q: %v", p, err)
			}
			return m
		case opClose:
			c.t.Fatalf("unexpected close %s", describeClose(p))
		}
	}
}

// expectClose reads until a close frame and checks its code and reason.
func (c *wsClient) expectClose(code uint16, reason string) {
	c.t.Helper()
	for {
		op, p, err := c.readFrame()
		if err != nil {
			c.t.Fatalf("waiting for close %d: %v", code, err)
		}
		if op != opClose {
			continue
		}
		if len(p) < 2 || binary.BigEndian.Uint16(p) != code || string(p[2:]) != reason {
			c.t.Fatalf("close %s, want %d %q", describeClose(p), code, reason)
		}
		return
	}
}

func describeClose(p []byte) string {
	if len(p) < 2 {
		return "(no code)"
	}
	return fmt.Sprintf("%d %q", binary.BigEndian.Uint16(p), p[2:])
}

// init does connection_init and waits for connection_ack.
func (c *wsClient) init() {
	c.t.Helper()
	c.sendText(`{"type":"connection_init"}`)
	if m := c.next(); m.Type != "connection_ack" {
		c.t.Fatalf("got %s, want connection_ack", m.Type)
	}
}

func subscribeMsg(id string, n int) string {
	return fmt.Sprintf(`{"id":%q,"type":"subscribe","payload":{"query":"subscription { ticks(n: %d) }"}}`, id, n)
}
