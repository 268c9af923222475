package gqlguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// heldAckUpstream is a graphql-transport-ws server that answers
// connection_init only once the test releases it, and records what it reads.
type heldAckUpstream struct {
	release chan struct{}
	got     chan string // message types read
}

func (u *heldAckUpstream) serve(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wsproxy.Subprotocol}})
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	ctx := r.Context()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var m wsMessage
		if json.Unmarshal(data, &m) != nil {
			return
		}
		u.got <- m.Type
		if m.Type == "connection_init" {
			select {
			case <-u.release:
			case <-ctx.Done():
				return
			}
			if c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_ack"}`)) != nil {
				return
			}
		}
	}
}

// TestWebSocketSubscribeBeforeAck: through Caddy, a client that sends
// subscribe before the connection_ack reached it gets the protocol's close
// 4401 Unauthorized and no error message; the subscribe reaches nothing. It
// used to be checked at once, and its refusal (here: not entitled) reached
// the client before the upstream's ack. After the ack, the same subscribe
// gets its error message, after the ack.
func TestWebSocketSubscribeBeforeAck(t *testing.T) {
	up := &heldAckUpstream{release: make(chan struct{}), got: make(chan string, 16)}
	upstream := httptest.NewServer(http.HandlerFunc(up.serve))
	t.Cleanup(upstream.Close)
	s := startCaddy(t, fmt.Sprintf(`
	route /ws {
		graphql_guard {
			schema %s
			entitlements {http.request.header.X-Families}%s
		}
		reverse_proxy %s
	}`, testdataPath(t, "library.graphqls"), libraryFamilies, upstream.Listener.Addr().String()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func() *wsTestClient { return dialWS(t, ctx, s.base, http.Header{"X-Families": {"catalog"}}) }
	write := func(c *wsTestClient, msg string) {
		t.Helper()
		c.write([]byte(msg))
	}
	subscribe := `{"id":"1","type":"subscribe","payload":` + q(loanEventsSub) + `}`

	c := dial()
	write(c, `{"type":"connection_init"}`)
	if typ := <-up.got; typ != "connection_init" {
		t.Fatalf("the upstream read %s first", typ)
	}
	write(c, subscribe) // the upstream holds its ack
	_, data, err := c.c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4401 || ce.Reason != "Unauthorized" {
		t.Fatalf("subscribe before the ack: read %q %v, want close 4401 Unauthorized", data, err)
	}
	close(up.release)

	// Acknowledged first: the refusal comes after the ack, the socket stays open.
	c = dial()
	write(c, `{"type":"connection_init"}`)
	if _, data, err := c.c.Read(ctx); err != nil || string(data) != `{"type":"connection_ack"}` {
		t.Fatalf("connection_init: %q %v", data, err)
	}
	write(c, subscribe)
	want := `{"id":"1","type":"error","payload":[{"message":"Tier not entitled to this endpoint family","extensions":{"code":"NOT_ENTITLED","family":"loans"}}]}`
	if _, data, err := c.c.Read(ctx); err != nil || string(data) != want {
		t.Fatalf("subscribe after the ack: %q %v, want %s", data, err, want)
	}
	for len(up.got) > 0 {
		if typ := <-up.got; typ == "subscribe" {
			t.Fatal("a refused subscribe reached the upstream")
		}
	}
}
