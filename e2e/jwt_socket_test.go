package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// A graphql-transport-ws client of the library site that keeps how its
// socket ended (close code and reason: 4403 and the credential watch's
// reason), for the streams of the access-token tests.

// tokenSocket is a graphql-transport-ws socket opened with an access token,
// subscribed to loanEvents; ended receives how it ended.
type tokenSocket struct {
	conn  *websocket.Conn
	ended chan socketEnd
}

type socketEnd struct {
	at     time.Time
	code   websocket.StatusCode // -1: not a close frame
	reason string
	err    error
}

// openTokenSocket dials the library site with tok in the upgrade's
// Authorization header, initialises, subscribes to loanEvents and reads
// until the socket ends.
func (g *jwtStack) openTokenSocket(t *testing.T, tok string) *tokenSocket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, g.libWS, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + tok}},
		Subprotocols: []string{"graphql-transport-ws"},
	})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("upgrade: status %d: %v", status, err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	for _, msg := range []string{`{"type":"connection_init","payload":{}}`} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	_, ack, err := c.Read(ctx)
	if err != nil || !bytes.Contains(ack, []byte(`"connection_ack"`)) {
		t.Fatalf("connection_ack: %s %v", ack, err)
	}
	sub := `{"id":"1","type":"subscribe","payload":{"query":"subscription { loanEvents { kind } }"}}`
	if err := c.Write(ctx, websocket.MessageText, []byte(sub)); err != nil {
		t.Fatal(err)
	}
	ts := &tokenSocket{conn: c, ended: make(chan socketEnd, 1)}
	go func() {
		for {
			_, msg, err := c.Read(context.Background())
			if err == nil {
				if bytes.Contains(msg, []byte(`"type":"ping"`)) {
					_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"pong"}`))
				}
				continue
			}
			end := socketEnd{at: time.Now(), code: websocket.CloseStatus(err), err: err}
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				end.reason = ce.Reason
			}
			ts.ended <- end
			return
		}
	}()
	return ts
}

// awaitSubscribers waits until the engine holds n loanEvents subscriptions.
func (g *jwtStack) awaitSubscribers(t *testing.T, n int) {
	t.Helper()
	stack.WaitFor(t, 30*time.Second, fmt.Sprintf("%d subscriptions in the engine", n), func() error {
		if got := g.events.Subscribers(); got != n {
			return fmt.Errorf("%d subscriptions", got)
		}
		return nil
	})
}

// awaitEnd waits up to ceiling for the socket to end and returns how.
func (ts *tokenSocket) awaitEnd(t *testing.T, ceiling time.Duration, what string) socketEnd {
	t.Helper()
	select {
	case e := <-ts.ended:
		return e
	case <-time.After(ceiling):
		t.Fatalf("socket still open %s after %s", ceiling, what)
		return socketEnd{}
	}
}
