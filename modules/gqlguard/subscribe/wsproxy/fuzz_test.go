package wsproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"
)

// recordingChecker admits payloads containing "ok" and rewrites them to a
// payload it records, so a test can tell what it admitted.
type recordingChecker struct {
	mu       sync.Mutex
	admitted map[string]bool
}

func (c *recordingChecker) CheckSubscribe(_ context.Context, payload []byte) ([]byte, []byte, func()) {
	if !bytes.Contains(payload, []byte("ok")) {
		return nil, []byte(`[{"message":"no"}]`), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fwd := `{"query":"admitted ` + string(rune('a'+len(c.admitted)%26)) + `"}`
	c.admitted[fwd] = true
	return []byte(fwd), nil, nil
}

// readUpstreamFrames decodes what the filter sent upstream: masked client
// frames, each a whole message.
func readUpstreamFrames(t *testing.T, b []byte) (msgs [][]byte) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 2 || b[1]&maskBit == 0 {
			t.Fatalf("malformed upstream frame % x", b)
		}
		op, n, off := b[0]&0x0F, uint64(b[1]&0x7F), 2
		switch n {
		case 126:
			n, off = uint64(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			n, off = binary.BigEndian.Uint64(b[2:]), 10
		}
		var key [4]byte
		copy(key[:], b[off:off+4])
		off += 4
		payload := append([]byte(nil), b[off:off+int(n)]...)
		maskBytes(key, 0, payload)
		if op == opText {
			msgs = append(msgs, payload)
		}
		b = b[off+int(n):]
	}
	return msgs
}

// FuzzClientStream feeds arbitrary client bytes through the filter: it must
// not panic, and every subscribe that reaches the upstream must carry a
// payload the Checker admitted.
func FuzzClientStream(f *testing.F) {
	f.Add([]byte(string(text(`{"type":"connection_init"}`)) + string(text(subscribeMsg("1", 1)))))
	f.Add([]byte(string(text(`{"type":"connection_init"}`)) + string(text(`{"id":"2","type":"subscribe","payload":{"query":"ok"}}`))))
	f.Add(append(frame(opText, false, []byte(`{"type":"connection_init"`)), frame(opContinuation, true, []byte(`}`))...))
	f.Add(frame(opPing, true, []byte("x")))
	f.Add([]byte{0x81, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		checker := &recordingChecker{admitted: map[string]bool{}}
		// The client sends data (as bytes read past the upgrade request)
		// and nothing more: its end of the pipe is closed, so the filter's
		// own writes to it fail, which it must survive too.
		server, client := net.Pipe()
		_ = client.Close()
		fc := newFilterConn(context.Background(), server, data, Config{
			Checker:      checker,
			InitTimeout:  time.Hour,
			MaxMessage:   4096,
			WriteTimeout: time.Second,
		})
		defer fc.Close()
		var upstream []byte
		buf := make([]byte, 512)
		for {
			n, err := fc.Read(buf)
			upstream = append(upstream, buf[:n]...)
			if err != nil {
				break
			}
		}
		for _, msg := range readUpstreamFrames(t, upstream) {
			var m clientMessage
			if err := json.Unmarshal(msg, &m); err != nil {
				t.Fatalf("the filter forwarded invalid JSON %q", msg)
			}
			if m.Type == msgSubscribe && !checker.admitted[string(m.Payload)] {
				t.Fatalf("subscribe forwarded without the Checker's admission: %q", msg)
			}
		}
	})
}
