package subhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// upstreamConn is one graphql-transport-ws connection to the upstream and
// the groups it carries. One goroutine (run) dials, reads and reconnects.
type upstreamConn struct {
	hub      *Hub
	identity string
	traceCtx context.Context // parents the dial spans (Scope.Trace)
	ctx      context.Context
	cancel   context.CancelFunc

	// wmu serialises writes to the upstream with the marking of what was
	// sent, so a group's complete never precedes its subscribe.
	wmu sync.Mutex

	mu     sync.Mutex
	ws     *websocket.Conn // nil while disconnected
	epoch  uint64          // incremented per acknowledged connection
	groups map[string]*group
	byID   map[string]*group
	nextID uint64
	closed bool

	fanOutBuf []*member // the reader goroutine's copy of a group's members
}

func newUpstreamConn(h *Hub, identity string, traceCtx context.Context) *upstreamConn {
	if traceCtx == nil {
		traceCtx = context.Background()
	}
	u := &upstreamConn{hub: h, identity: identity, traceCtx: traceCtx, groups: map[string]*group{}, byID: map[string]*group{}}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	return u
}

// upstreamMessage is a graphql-transport-ws message from the upstream.
type upstreamMessage struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// run connects, re-subscribes every group, reads until the connection
// fails, and reconnects with backoff until the connection is closed or the
// retries are exhausted.
func (u *upstreamConn) run() {
	cfg := &u.hub.cfg
	failures := 0
	connected := false
	for {
		done := cfg.Observer.UpstreamDial(u.traceCtx, connected)
		ws, err := u.dial()
		done(err)
		if u.ctx.Err() != nil {
			if ws != nil {
				_ = ws.Close(websocket.StatusNormalClosure, "")
			}
			return
		}
		if err != nil {
			failures++
			if failures >= cfg.MaxRetries {
				u.fail()
				return
			}
			if !u.sleep(backoff(cfg.MinBackoff, cfg.MaxBackoff, failures)) {
				return
			}
			continue
		}
		failures, connected = 0, true
		cfg.Observer.UpstreamConnections(1)
		u.attach(ws)
		u.sendPending()
		err = u.read(ws)
		u.detach()
		cfg.Observer.UpstreamConnections(-1)
		_ = ws.CloseNow()
		if u.ctx.Err() != nil {
			return
		}
		cfg.Observer.UpstreamLost(err)
		if !u.sleep(backoff(cfg.MinBackoff, cfg.MaxBackoff, 0)) {
			return
		}
	}
}

// backoff is min·2^attempt capped at max, with ±50% jitter.
func backoff(minDelay, maxDelay time.Duration, attempt int) time.Duration {
	d := minDelay
	for i := 0; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	return d/2 + rand.N(d) //nolint:gosec // jitter, not a secret
}

func (u *upstreamConn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-u.ctx.Done():
		return false
	}
}

// dial opens the socket and completes connection_init / connection_ack.
func (u *upstreamConn) dial() (*websocket.Conn, error) {
	cfg := &u.hub.cfg
	var hdr http.Header
	if header := u.memberHeader(); header != nil {
		h, err := header()
		if err != nil {
			return nil, fmt.Errorf("subhub: the upstream handshake's headers: %w", err)
		}
		hdr = h
	}
	ctx, cancel := context.WithTimeout(u.ctx, cfg.DialTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, cfg.URL, &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   hdr,
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("subhub: dialing the upstream: %w", err)
	}
	ws.SetReadLimit(cfg.ReadLimit)
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)); err != nil {
		_ = ws.CloseNow()
		return nil, fmt.Errorf("subhub: sending connection_init: %w", err)
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			_ = ws.CloseNow()
			return nil, fmt.Errorf("subhub: awaiting connection_ack: %w", err)
		}
		var m upstreamMessage
		if err := json.Unmarshal(data, &m); err != nil {
			_ = ws.CloseNow()
			return nil, fmt.Errorf("subhub: reading the upstream's message: %w", err)
		}
		switch m.Type {
		case "connection_ack":
			return ws, nil
		case "ping":
			if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`)); err != nil {
				_ = ws.CloseNow()
				return nil, fmt.Errorf("subhub: answering a ping: %w", err)
			}
		}
	}
}

func (u *upstreamConn) attach(ws *websocket.Conn) {
	u.mu.Lock()
	u.ws = ws
	u.epoch++
	u.mu.Unlock()
}

func (u *upstreamConn) detach() {
	u.mu.Lock()
	u.ws = nil
	u.mu.Unlock()
}

// read dispatches the upstream's messages until the connection fails.
func (u *upstreamConn) read(ws *websocket.Conn) error {
	for {
		_, data, err := ws.Read(u.ctx)
		if err != nil {
			return fmt.Errorf("subhub: reading from the upstream: %w", err)
		}
		var m upstreamMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("subhub: reading the upstream's message: %w", err)
		}
		switch m.Type {
		case "next":
			u.fanOut(m.ID, m.Payload)
		case "error", "complete":
			var errs []byte
			if m.Type == "error" {
				errs = m.Payload
				if len(errs) == 0 {
					errs = []byte(`[{"message":"Subscription failed upstream"}]`)
				}
			}
			u.endGroup(m.ID, errs)
		case "ping":
			if err := u.write(ws, []byte(`{"type":"pong"}`)); err != nil {
				return err
			}
		}
	}
}

// memberHeader is the Scope.Header of a subscriber the connection carries
// now: a reconnect asserts the identity of someone still subscribed, never
// of a subscriber who left (revoked, say) after opening the connection.
// Every subscriber of a connection shares its scope, so any one will do.
func (u *upstreamConn) memberHeader() func() (http.Header, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, g := range u.byID {
		for _, m := range g.members {
			if m.header != nil {
				return m.header
			}
		}
	}
	return nil
}

// fanOut hands one event to every subscriber of the group, in order: it
// runs only on the connection's reader goroutine. The members are copied
// under the lock and handed the event outside it, because a sink may write
// to its socket there (wsproxy writes inline when the socket's buffer has
// room) and subscribers joining or leaving must not wait for thousands of
// writes. A member that leaves during the loop may still be handed this
// event; Sink.Next drops it for a subscription that has ended.
func (u *upstreamConn) fanOut(id string, payload json.RawMessage) {
	u.mu.Lock()
	g := u.byID[id]
	if g == nil {
		u.mu.Unlock()
		return
	}
	members := append(u.fanOutBuf[:0], g.members...)
	u.mu.Unlock()
	for _, m := range members {
		m.sink.Next(payload)
	}
	u.hub.cfg.Observer.FanOut(len(members))
	clear(members) // keeps no member alive
	u.fanOutBuf = members[:0]
}

// endGroup ends group id for all its subscribers.
func (u *upstreamConn) endGroup(id string, errs []byte) {
	u.mu.Lock()
	g := u.byID[id]
	if g == nil {
		u.mu.Unlock()
		return
	}
	members := u.removeGroupLocked(g)
	u.mu.Unlock()
	for _, m := range members {
		m.sink.End(errs)
	}
	u.closeIfIdle()
}

func (u *upstreamConn) removeGroupLocked(g *group) []*member {
	delete(u.byID, g.id)
	if g.key != "" && u.groups[g.key] == g {
		delete(u.groups, g.key)
	}
	g.ended = true
	members := g.members
	g.members = nil
	u.hub.cfg.Observer.Groups(-1)
	return members
}

// leave removes m from g; the last member leaving completes g upstream.
func (u *upstreamConn) leave(g *group, m *member) {
	u.mu.Lock()
	if g.ended {
		u.mu.Unlock()
		return
	}
	for i, x := range g.members {
		if x == m {
			last := len(g.members) - 1
			g.members[i] = g.members[last]
			g.members[last] = nil
			g.members = g.members[:last]
			break
		}
	}
	if len(g.members) > 0 {
		u.mu.Unlock()
		return
	}
	u.removeGroupLocked(g)
	u.mu.Unlock()
	u.wmu.Lock()
	u.mu.Lock()
	ws, sent := u.ws, g.sentEpoch == u.epoch && g.sentEpoch != 0
	u.mu.Unlock()
	if ws != nil && sent {
		_ = u.write(ws, []byte(`{"id":"`+g.id+`","type":"complete"}`)) // ids are base-36 digits
	}
	u.wmu.Unlock()
	u.closeIfIdle()
}

// closeIfIdle closes the connection once it carries no group.
func (u *upstreamConn) closeIfIdle() {
	h := u.hub
	h.mu.Lock()
	u.mu.Lock()
	idle := len(u.byID) == 0 && !u.closed
	if idle {
		u.closed = true
		if h.conns[u.identity] == u {
			delete(h.conns, u.identity)
		}
	}
	u.mu.Unlock()
	h.mu.Unlock()
	if idle {
		u.cancel()
	}
}

// fail ends every group with UnavailableErrors: the retries are exhausted.
func (u *upstreamConn) fail() {
	h := u.hub
	h.mu.Lock()
	u.mu.Lock()
	u.closed = true
	if h.conns[u.identity] == u {
		delete(h.conns, u.identity)
	}
	var members []*member
	for _, g := range u.byID {
		members = append(members, u.removeGroupLocked(g)...)
	}
	u.mu.Unlock()
	h.mu.Unlock()
	u.cancel()
	for _, m := range members {
		m.sink.End(UnavailableErrors)
	}
}

// sendPending sends the subscribe of every group not yet sent on the
// current connection (a new group, or all of them after a reconnect).
func (u *upstreamConn) sendPending() {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	u.mu.Lock()
	ws, epoch := u.ws, u.epoch
	if ws == nil {
		u.mu.Unlock()
		return
	}
	var msgs [][]byte
	for _, g := range u.byID {
		if g.sentEpoch != epoch {
			g.sentEpoch = epoch
			msgs = append(msgs, subscribeMessage(g.id, g.payload))
		}
	}
	u.mu.Unlock()
	for _, msg := range msgs {
		if err := u.write(ws, msg); err != nil {
			// The reader sees the failure and reconnects; everything is
			// sent again on the next connection.
			_ = ws.CloseNow()
			return
		}
	}
}

func subscribeMessage(id string, payload []byte) []byte {
	b := make([]byte, 0, len(id)+len(payload)+40)
	b = append(b, `{"id":"`...)
	b = append(b, id...)
	b = append(b, `","type":"subscribe","payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

func (u *upstreamConn) write(ws *websocket.Conn, msg []byte) error {
	ctx, cancel := context.WithTimeout(u.ctx, u.hub.cfg.WriteTimeout)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, msg); err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("subhub: writing to the upstream: %w", err)
	}
	return nil
}
