package gqlguard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
	"github.com/coder/websocket"
)

// wsTestClient is a graphql-transport-ws client socket on a test site's /ws
// route, closed when the test ends.
type wsTestClient struct {
	t   *testing.T
	ctx context.Context
	c   *websocket.Conn
}

// dialWS opens base's /ws with the protocol's subprotocol and header.
func dialWS(t *testing.T, ctx context.Context, base string, header http.Header) *wsTestClient {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", &websocket.DialOptions{
		Subprotocols: []string{wsproxy.Subprotocol},
		HTTPHeader:   header,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsTestClient{t: t, ctx: ctx, c: c}
}

// write sends one text frame as it is.
func (w *wsTestClient) write(msg []byte) {
	w.t.Helper()
	if err := w.c.Write(w.ctx, websocket.MessageText, msg); err != nil {
		w.t.Fatalf("the socket closed: %v", err)
	}
}

// exchange sends m and returns the next message read.
func (w *wsTestClient) exchange(m wsMessage) wsMessage {
	w.t.Helper()
	out, _ := json.Marshal(m)
	w.write(out)
	_, data, err := w.c.Read(w.ctx)
	if err != nil {
		w.t.Fatalf("the socket closed: %v", err)
	}
	var reply wsMessage
	if err := json.Unmarshal(data, &reply); err != nil {
		w.t.Fatal(err)
	}
	return reply
}
