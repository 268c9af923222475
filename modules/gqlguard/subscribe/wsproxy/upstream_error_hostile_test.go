package wsproxy

import (
	"crypto/sha1" //nolint:gosec // RFC 6455 names SHA-1 for Sec-WebSocket-Accept
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/wsframe"
)

// A hostile upstream cannot inflate a subscription's errors (docs/design.md
// D83): for each subscribe it answers error three times for its id, error
// for ids the client never opened, and an error split over fragmented frames
// with a ping between them; the Checker's failed runs once per admitted
// subscription, and never for an id that was not active.
func TestHostileUpstreamErrorsCountOncePerSubscription(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(hostileErrorUpstream))
	t.Cleanup(up.Close)
	checker := &policyChecker{}
	p := startProxy(t, up.Listener.Addr().String(), defaultConfig(Config{Checker: checker}))
	c := dial(t, p.addr)
	c.init()
	for _, id := range []string{"a", "b", "c"} {
		c.sendText(subscribeMsg(id, 1))
		// The three errors for id and the stranger's, whole.
		for range 4 {
			if m := c.next(); m.Type != "error" {
				t.Fatalf("subscription %s: %+v", id, m)
			}
		}
		// The fragmented one, passed on as it came: first fragment, ping,
		// last fragment.
		for _, want := range []byte{opText, opPing, 0x0} {
			if op, _, err := c.readFrame(); err != nil || op != want {
				t.Fatalf("subscription %s: frame %#x %v, want %#x", id, op, err, want)
			}
		}
		if got := checker.failed.Load(); got != checker.admitted.Load() {
			t.Fatalf("after %s: failed ran %d times for %d admitted", id, got, checker.admitted.Load())
		}
	}
	if got := checker.failed.Load(); got != 3 {
		t.Fatalf("failed ran %d times, want 3", got)
	}
}

// hostileErrorUpstream acknowledges connection_init and answers every
// subscribe with error messages: three for its id, one for an id nobody
// opened, then one for its id again split in two fragments around a ping.
func hostileErrorUpstream(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-Websocket-Key")
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	sum := sha1.Sum([]byte(key + websocketGUID)) //nolint:gosec // RFC 6455
	_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(sum[:])+"\r\nSec-WebSocket-Protocol: "+Subprotocol+"\r\n\r\n")
	for {
		payload, err := wsframe.ReadClientFrame(brw.Reader)
		if err != nil {
			return
		}
		var m struct{ Type, ID string }
		if json.Unmarshal(payload, &m) != nil {
			continue
		}
		var out []byte
		switch m.Type {
		case "connection_init":
			out = appendServerFrame(out, opText, []byte(`{"type":"connection_ack"}`))
		case "subscribe":
			errMsg := []byte(`{"id":"` + m.ID + `","type":"error","payload":[{"message":"no"}]}`)
			for range 3 {
				out = appendServerFrame(out, opText, errMsg)
			}
			out = appendServerFrame(out, opText, []byte(`{"id":"stranger","type":"error","payload":[{"message":"no"}]}`))
			half := len(errMsg) / 2
			out = append(out, 0x01, byte(half)) // text, not final
			out = append(out, errMsg[:half]...)
			out = appendServerFrame(out, opPing, nil)
			out = append(out, 0x80, byte(len(errMsg)-half)) // continuation, final
			out = append(out, errMsg[half:]...)
		default:
			continue
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}
