package wsproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
)

// serverConn is one terminated client socket. Its only goroutine while idle
// is the reader (readLoop), parked in the netpoller; writes go through a
// bounded queue drained by a goroutine that exists only while the queue is
// not empty (server_queue.go); timers are time.AfterFunc.
type serverConn struct {
	raw    net.Conn
	cfg    TerminateConfig
	ctx    context.Context // TerminateConfig.Context
	reg    *Sockets
	early  []byte
	frames clientFrames
	rbuf   [readChunk]byte

	initSeen   bool // reader only
	initTimer  *time.Timer
	stopFollow func()

	mu           sync.Mutex
	subs         map[string]*termSub
	keepTimer    *time.Timer
	awaitingPong bool
	queue        []outMsg
	pending      []byte                    // the rest of a frame an inline write left: written before the queue
	queueTaken   sync.Cond                 // the writer took the queue (reply waits on it)
	flushing     bool                      // the writer's role is taken: by the writer goroutine, or an inline write
	inline       func([]byte) (int, error) // a non-blocking write(2) (server_inline.go); nil: none
	final        bool                      // a close frame is queued: nothing after it
	clientClosed bool
	slow         bool // dropped as a slow consumer
	slowNoted    bool // the drop was counted
	done         bool // finish ran
}

// readChunk is the reader's buffer: small, since an idle socket keeps it.
const readChunk = 512

func newServerConn(ctx context.Context, raw net.Conn, early []byte, cfg TerminateConfig, reg *Sockets) *serverConn {
	c := &serverConn{raw: raw, cfg: cfg, ctx: ctx, reg: reg, early: early, inline: nonBlockingWriter(raw)}
	c.queueTaken.L = &c.mu
	c.frames.maxMessage = cfg.MaxMessage
	cfg.Observer.Sockets(1)
	if reg != nil && !reg.add(c) {
		c.closeWith(closeGoingAway, "Server shutting down")
		return c
	}
	c.initTimer = time.AfterFunc(cfg.InitTimeout, func() {
		c.closeWith(closeInitTimeout, "Connection initialisation timeout")
	})
	c.mu.Lock()
	c.keepTimer = time.AfterFunc(cfg.Keepalive, c.keepaliveTick)
	c.mu.Unlock()
	if cfg.Revocations != nil {
		c.stopFollow = cfg.Revocations.Follow(func(reason string) {
			c.cfg.Logger.Debug("credential no longer valid: ending the subscription connection")
			c.closeWith(closeForbidden, reason)
		})
	}
	return c
}

// readLoop reads and handles the client's frames until the connection ends.
func (c *serverConn) readLoop() {
	defer c.finish()
	defer func() {
		if v := recover(); v != nil {
			c.cfg.Logger.Error("panic handling the client's messages", zap.String("panic_type", fmt.Sprintf("%T", v)))
		}
	}()
	if len(c.early) > 0 {
		c.feed(c.early)
		c.early = nil
	}
	for {
		n, err := c.raw.Read(c.rbuf[:])
		if n > 0 {
			c.feed(c.rbuf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *serverConn) feed(b []byte) {
	c.mu.Lock()
	closing := c.final
	c.mu.Unlock()
	if closing {
		return // after a close frame nothing is read
	}
	if err := c.frames.feed(b, c); err != nil {
		var ce *closeError
		if !errors.As(err, &ce) {
			ce = &closeError{closeInternalError, "Internal Server Error"}
		}
		c.cfg.Logger.Debug("closing the subscription connection", zap.Uint16("code", ce.code))
		c.closeWith(ce.code, ce.reason)
	}
}

// control answers a client control frame.
func (c *serverConn) control(op byte, payload []byte) error {
	switch op {
	case opPing:
		c.reply(outMsg{op: opPong, payload: append([]byte(nil), payload...)})
	case opPong:
		c.mu.Lock()
		if c.awaitingPong {
			c.awaitingPong = false
			c.keepTimer.Reset(c.cfg.Keepalive)
		}
		c.mu.Unlock()
	case opClose:
		code := uint16(closeNormal)
		if len(payload) >= 2 {
			code = binary.BigEndian.Uint16(payload)
		}
		if code < 1000 || code == 1005 || code == 1006 || code == 1015 || code >= 5000 {
			code = closeProtocolError
		}
		c.mu.Lock()
		c.clientClosed = true
		c.mu.Unlock()
		c.closeWith(code, "")
	}
	return nil
}

// message decides on one client text message: the filter's rules
// (filter_conn.go), answered here instead of forwarded.
func (c *serverConn) message(msg []byte) error {
	m, err := decodeClientMessage(msg)
	if err != nil {
		return err
	}
	tokenInside := containsToken(msg, c.cfg.Token)
	if tokenInside && m.Type != msgSubscribe {
		if m.Type == msgConnectionInit && c.initSeen {
			return &closeError{closeTooManyInits, "Too many initialisation requests"}
		}
		return &closeError{closeBadRequest, "Request must not contain the bearer token"}
	}
	switch m.Type {
	case msgConnectionInit:
		if c.initSeen {
			return &closeError{closeTooManyInits, "Too many initialisation requests"}
		}
		c.initSeen = true
		c.initTimer.Stop()
		c.reply(outMsg{op: opText, payload: []byte(`{"type":"connection_ack"}`)})
	case msgPing:
		c.reply(outMsg{op: opText, payload: []byte(`{"type":"pong"}`)})
	case msgSubscribe:
		return c.subscribe(m, tokenInside)
	case msgComplete:
		c.removeSub(*m.ID, nil, false)
	}
	return nil
}

// subscribe admits one subscribe (the filter's checks and order) and hands
// it to the Upstream, or answers it with an error message.
func (c *serverConn) subscribe(m clientMessage, tokenInside bool) error {
	id := *m.ID
	if !c.initSeen {
		return &closeError{closeUnauthorized, "Unauthorized"}
	}
	c.mu.Lock()
	_, exists := c.subs[id]
	active := len(c.subs)
	c.mu.Unlock()
	if exists {
		return &closeError{closeSubscriberExists, "Subscriber for " + id + " already exists"}
	}
	if !isObject(m.Payload) {
		return &closeError{closeBadRequest, "Invalid message received: payload must be an object"}
	}
	idJSON := string(appendJSONString(nil, id))
	if tokenInside {
		c.cfg.refused(OutcomeBearer)
		c.refuse(idJSON, graphQLErrors("Request must not contain the bearer token", "BAD_REQUEST"))
		return nil
	}
	forward, sub, errs := c.admit(active, m.Payload)
	if errs != nil {
		c.refuse(idJSON, errs)
		return nil
	}
	s := &termSub{c: c, id: id, idJSON: idJSON, holdsSlot: sub.holdsSlot, failed: sub.failed}
	c.cfg.Observer.Subscriptions(1)
	c.mu.Lock()
	if c.done || c.final {
		c.mu.Unlock()
		s.release()
		return nil
	}
	if c.subs == nil {
		c.subs = make(map[string]*termSub)
	}
	c.subs[id] = s
	c.mu.Unlock()
	stop, err := c.cfg.Upstream.Subscribe(forward, s)
	if err != nil {
		c.cfg.Logger.Error("starting a terminated subscription failed", zap.Error(err))
		c.removeSub(id, graphQLErrors("Internal Server Error", "INTERNAL_SERVER_ERROR"), false)
		return nil
	}
	c.mu.Lock()
	ended := c.subs[id] != s
	if !ended {
		s.stop = stop
		if c.cfg.MaxLifetime > 0 {
			s.timer = time.AfterFunc(c.cfg.MaxLifetime, func() {
				c.removeSub(id, graphQLErrors("Subscription lifetime exceeded", "SUBSCRIPTION_EXPIRED"), true)
			})
		}
	}
	c.mu.Unlock()
	if ended {
		stop() // ended (upstream error, connection end) before Subscribe returned
	}
	return nil
}

// admit runs admitSubscribe on a goroutine of its own, so that the reader's
// stack, which an idle socket keeps, never grows to the checker's depth.
func (c *serverConn) admit(active int, payload []byte) (forward []byte, sub activeSub, errs []byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				c.cfg.Logger.Error("panic admitting a subscription", zap.String("panic_type", fmt.Sprintf("%T", v)))
				forward, sub, errs = nil, activeSub{}, graphQLErrors("Internal Server Error", "INTERNAL_SERVER_ERROR")
			}
		}()
		forward, sub, errs = admitSubscribe(c.ctx, &c.cfg.Config, active, payload)
	}()
	<-done
	return forward, sub, errs
}

// refuse answers a subscription with an error message; it never becomes
// active.
func (c *serverConn) refuse(idJSON string, errs []byte) {
	c.cfg.Logger.Debug("subscription refused")
	c.reply(outMsg{op: opText, idJSON: idJSON, typ: "error", payload: errs})
}

// removeSub ends subscription id on the client's side: the upstream is
// left, the slot released, and errs (if any) sent as an error message.
// expired marks the end of MaxLifetime.
func (c *serverConn) removeSub(id string, errs []byte, expired bool) {
	c.mu.Lock()
	s := c.subs[id]
	if s == nil {
		c.mu.Unlock()
		return
	}
	delete(c.subs, id)
	stop := s.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.release()
	if expired {
		c.cfg.Logger.Debug("subscription lifetime exceeded")
	}
	if errs != nil {
		c.enqueue(outMsg{op: opText, idJSON: s.idJSON, typ: "error", payload: errs})
	}
}

// closeWith queues a close frame of code and reason; only the first call
// does anything. The socket ends once the frame is written and the client
// has closed (or closeGraceOnFinish has passed).
func (c *serverConn) closeWith(code uint16, reason string) {
	c.mu.Lock()
	if c.final || c.done {
		c.mu.Unlock()
		return
	}
	c.final = true
	c.queueTaken.Broadcast()
	c.queue = append(c.queue, outMsg{op: opClose, payload: closePayload(code, reason)})
	c.startFlushLocked()
	if c.keepTimer != nil {
		c.keepTimer.Stop()
	}
	c.mu.Unlock()
	// Backstop: the reader ends even if the close frame cannot be written.
	_ = c.raw.SetReadDeadline(time.Now().Add(c.cfg.WriteTimeout + closeGraceOnFinish))
}

// keepaliveTick sends a ping, or closes 4504 when the last one got no pong.
func (c *serverConn) keepaliveTick() {
	c.mu.Lock()
	if c.final || c.done {
		c.mu.Unlock()
		return
	}
	if c.awaitingPong {
		c.mu.Unlock()
		c.closeWith(closePongTimeout, "Keepalive timeout")
		return
	}
	c.awaitingPong = true
	c.keepTimer.Reset(c.cfg.PongTimeout)
	ok := c.enqueueLocked(outMsg{op: opPing})
	c.mu.Unlock()
	if !ok && c.droppedSlow() {
		c.cfg.Observer.SlowConsumerDropped()
	}
}

// finish ends the socket: every subscription is left and its slot
// released, timers and the credential following stopped.
func (c *serverConn) finish() {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	c.done, c.final = true, true
	c.queueTaken.Broadcast()
	subs := c.subs
	c.subs = nil
	c.queue = nil
	if c.keepTimer != nil {
		c.keepTimer.Stop()
	}
	c.mu.Unlock()
	if c.initTimer != nil {
		c.initTimer.Stop()
	}
	if c.stopFollow != nil {
		c.stopFollow()
	}
	for _, s := range subs {
		if s.stop != nil {
			s.stop()
		}
		s.release()
	}
	if c.reg != nil {
		c.reg.remove(c)
	}
	_ = c.raw.Close()
	c.cfg.Observer.Sockets(-1)
}

// termSub is one active subscription of a terminated socket: the hub's
// Sink for it.
type termSub struct {
	c         *serverConn
	id        string
	idJSON    string
	holdsSlot bool
	failed    func() // the Checker's, for the hub's error; nil: none
	stop      func()
	timer     *time.Timer

	releaseOnce sync.Once
}

// Next queues one event; false once the socket is closing or was dropped.
func (s *termSub) Next(payload []byte) bool {
	return s.c.enqueueEvent(s, outMsg{op: opText, idJSON: s.idJSON, typ: "next", payload: payload})
}

// End is the upstream ending the subscription (complete, error, retries
// exhausted): the client gets the same message.
func (s *termSub) End(errs []byte) {
	c := s.c
	c.mu.Lock()
	if c.subs[s.id] != s {
		c.mu.Unlock()
		return
	}
	delete(c.subs, s.id)
	c.mu.Unlock()
	s.release()
	if errs != nil {
		// The hub's error (the upstream's error message, or its socket
		// lost past the retries): the operation failed (docs/design.md
		// D83). Only the first End gets here: it removed s.
		if s.failed != nil {
			s.failed()
		}
		c.enqueue(outMsg{op: opText, idJSON: s.idJSON, typ: "error", payload: errs})
	} else {
		c.enqueue(outMsg{op: opText, idJSON: s.idJSON, typ: "complete"})
	}
}

// release gives back the slot and stops the lifetime timer, once.
func (s *termSub) release() {
	s.releaseOnce.Do(func() {
		if s.timer != nil {
			s.timer.Stop()
		}
		if s.holdsSlot {
			s.c.cfg.Slots.Release()
		}
		s.c.cfg.Observer.Subscriptions(-1)
	})
}
