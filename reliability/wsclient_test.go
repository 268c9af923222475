package reliability

// A graphql-transport-ws client written frame by frame, so hostile tests can
// send what no client library would.

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// wsConn is a raw WebSocket client: it writes any frame, well formed or not,
// and reads the server's frames as they are.
type wsConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
	wm sync.Mutex
}

// dialWS upgrades to graphql-transport-ws with the key in Authorization.
func (a *anyBackend) dialWS(key string) *wsConn {
	a.t.Helper()
	c, err := net.DialTimeout("tcp", a.Addr, 10*time.Second)
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { c.Close() })
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	req := "GET /graphql HTTP/1.1\r\nHost: " + a.Addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(nonce) + "\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Protocol: graphql-transport-ws\r\nAuthorization: Bearer " + key + "\r\n\r\n"
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		a.t.Fatal(err)
	}
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		a.t.Fatalf("upgrade: %d %s", resp.StatusCode, b)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "graphql-transport-ws" {
		a.t.Fatalf("upgrade subprotocol %q", p)
	}
	_ = c.SetDeadline(time.Time{})
	return &wsConn{t: a.t, c: c, br: br}
}

const (
	opCont  = 0x0
	opText  = 0x1
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xA
)

// header is a client frame header (masked) announcing n payload bytes.
func frameHeader(fin bool, op byte, n uint64, mask [4]byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	h := []byte{b0, 0}
	switch {
	case n < 126:
		h[1] = 0x80 | byte(n)
	case n <= 0xFFFF:
		h[1] = 0x80 | 126
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h[1] = 0x80 | 127
		h = binary.BigEndian.AppendUint64(h, n)
	}
	return append(h, mask[:]...)
}

// frame is one complete masked client frame.
func frame(fin bool, op byte, payload []byte) []byte {
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	out := frameHeader(fin, op, uint64(len(payload)), mask)
	for i, c := range payload {
		out = append(out, c^mask[i%4])
	}
	return out
}

// write writes raw bytes (frames); an error is returned, not fatal, since
// the server may close while a large frame is being written.
func (w *wsConn) write(b []byte) error {
	w.wm.Lock()
	defer w.wm.Unlock()
	_ = w.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	_, err := w.c.Write(b)
	return err
}

// send writes one text message; it fails the test on error.
func (w *wsConn) send(msg string) {
	if err := w.write(frame(true, opText, []byte(msg))); err != nil {
		w.t.Errorf("write: %v", err)
	}
}

// wsFrame is one server frame.
type wsFrame struct {
	op      byte
	fin     bool
	payload []byte
}

// closeCode is a close frame's code and reason.
func (f wsFrame) closeCode() (int, string) {
	if len(f.payload) < 2 {
		return 1005, ""
	}
	return int(binary.BigEndian.Uint16(f.payload)), string(f.payload[2:])
}

// read reads one frame, waiting at most until deadline.
func (w *wsConn) read(deadline time.Time) (wsFrame, error) {
	_ = w.c.SetReadDeadline(deadline)
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return wsFrame{}, err
	}
	f := wsFrame{op: h[0] & 0x0F, fin: h[0]&0x80 != 0}
	if h[1]&0x80 != 0 {
		return f, errors.New("server frame is masked")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return f, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return f, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 16<<20 {
		return f, fmt.Errorf("server frame of %d bytes", n)
	}
	f.payload = make([]byte, n)
	_, err := io.ReadFull(w.br, f.payload)
	return f, err
}

// gqlMsg is one graphql-transport-ws message from the server.
type gqlMsg struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// msgWithin bounds the wait for one awaited message or frame: a bound on a
// failure, generous for a loaded 2-core machine, counted from when the test
// starts to await it (a deadline shared by several waits would also bound the
// waits in between).
const msgWithin = 20 * time.Second

// next reads the next text message; a close frame or an error fails the
// test.
func (w *wsConn) next(deadline time.Time) gqlMsg {
	w.t.Helper()
	for {
		f, err := w.read(deadline)
		if err != nil {
			w.t.Fatalf("reading a message: %v", err)
		}
		switch f.op {
		case opPing:
			_ = w.write(frame(true, opPong, f.payload))
			continue
		case opClose:
			code, reason := f.closeCode()
			w.t.Fatalf("socket closed with %d %q while a message was awaited", code, reason)
		case opText:
		default:
			w.t.Fatalf("unexpected frame opcode %d", f.op)
		}
		var m gqlMsg
		if err := json.Unmarshal(f.payload, &m); err != nil {
			w.t.Fatalf("message %q: %v", f.payload, err)
		}
		return m
	}
}

// init sends connection_init and awaits connection_ack.
func (w *wsConn) init() {
	w.t.Helper()
	w.send(`{"type":"connection_init"}`)
	if m := w.next(time.Now().Add(10 * time.Second)); m.Type != "connection_ack" {
		w.t.Fatalf("after connection_init: %+v", m)
	}
}

// awaitClose reads until the server's close frame (text messages before it
// are skipped) and returns its code and reason, and how long it took.
func (w *wsConn) awaitClose(within time.Duration) (int, string) {
	w.t.Helper()
	deadline := time.Now().Add(within)
	for {
		f, err := w.read(deadline)
		if err != nil {
			w.t.Fatalf("no close frame: %v", err)
		}
		if f.op == opClose {
			return f.closeCode()
		}
	}
}
