package wsproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// filterConn is the client connection as reverse_proxy sees it after
// Hijack: Read returns the client's frames that passed the filter,
// re-encoded for the upstream; Write forwards the upstream's bytes to the
// client (clientWriter).
type filterConn struct {
	net.Conn // the hijacked client connection
	cfg      Config
	ctx      context.Context
	cancel   context.CancelFunc
	writer   *clientWriter
	subs     subscriptions

	// Read side, used only by the goroutine calling Read.
	frames          clientFrames
	early           []byte // bytes the server had buffered before Hijack
	out             []byte // filtered bytes for the upstream
	outPos          int
	initSeen        bool
	clientSentClose bool
	upstreamClosed  bool
	readErr         error

	initTimer *time.Timer
	acked     atomic.Bool // the upstream's connection_ack is on its way to the client
	ending    atomic.Bool // terminate ran: the upstream gets a close, then EOF
	closeOnce sync.Once
}

// keptOutBuffer is the largest output buffer kept once drained.
const keptOutBuffer = 4 << 10

// newFilterConn starts filtering raw; early are the bytes read past the
// upgrade request. The init timeout starts now.
func newFilterConn(ctx context.Context, raw net.Conn, early []byte, cfg Config) *filterConn {
	cfg = cfg.withDefaults()
	c := &filterConn{Conn: raw, cfg: cfg, early: early}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.subs.slots = cfg.Slots
	c.frames.maxMessage = cfg.MaxMessage
	c.writer = newClientWriter(raw, cfg.WriteTimeout, c.upstreamEnded)
	c.initTimer = time.AfterFunc(cfg.InitTimeout, func() {
		defer c.recoverCallback()
		c.terminate(closeInitTimeout, "Connection initialisation timeout")
	})
	if w := cfg.Watch; w != nil {
		go c.followWatch()
	}
	return c
}

// followWatch ends the connection with 4403 when the credential watch
// fires; it returns when the connection ends.
func (c *filterConn) followWatch() {
	defer c.recoverCallback()
	select {
	case <-c.cfg.Watch.Done():
		if reason := c.cfg.Watch.Reason(); reason != "" {
			c.cfg.Logger.Debug("credential no longer valid: ending the subscription connection")
			c.terminate(closeForbidden, reason)
		}
	case <-c.ctx.Done():
	}
}

// upstreamEnded is called by the writer for each upstream complete or
// error message, and for its connection_ack (before the ack's last bytes are
// written: a frame the filter injects after this waits for them). An error
// message ends an active subscription with an error: the Checker is told,
// once, since the id is no longer active after it (docs/design.md D83).
func (c *filterConn) upstreamEnded(typ, id []byte) {
	if string(typ) == msgConnectionAck {
		c.acked.Store(true)
		return
	}
	if sub, ok := c.subs.removeBytes(id); ok && sub.failed != nil && string(typ) == msgError {
		sub.failed()
	}
}

// terminate sends the client a close frame of code and reason (between two
// upstream messages), and makes Read send the upstream a normal close and
// then EOF. Only the first call does anything.
func (c *filterConn) terminate(code uint16, reason string) {
	if c.ending.Swap(true) {
		return
	}
	frame := appendServerFrame(nil, opClose, closePayload(code, reason))
	if err := c.writer.inject(frame, true); err != nil && !errors.Is(err, errClientClosed) {
		c.cfg.Logger.Debug("could not send the close frame: dropping the connection", zap.Error(err))
		_ = c.Conn.Close()
	}
	// Wake a Read blocked on the client.
	_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
}

// Read returns the next filtered bytes for the upstream.
func (c *filterConn) Read(p []byte) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.cfg.Logger.Error("panic filtering the client's messages", zap.String("panic_type", fmt.Sprintf("%T", v)))
			c.terminate(closeInternalError, "Internal Server Error")
			n, err = 0, io.EOF
		}
	}()
	for {
		if c.outPos < len(c.out) {
			n = copy(p, c.out[c.outPos:])
			c.outPos += n
			if c.outPos == len(c.out) {
				c.resetOut()
			}
			return n, nil
		}
		if c.ending.Load() {
			if !c.upstreamClosed {
				c.upstreamClosed = true
				if !c.clientSentClose {
					c.out = appendClientFrame(c.out, opClose, closePayload(closeNormal, ""))
					continue
				}
			}
			return 0, io.EOF
		}
		if c.readErr != nil {
			return 0, c.readErr
		}
		var chunk []byte
		if len(c.early) > 0 {
			chunk, c.early = c.early, nil
		} else {
			m, rerr := c.Conn.Read(p)
			chunk = p[:m]
			if rerr != nil && !(c.ending.Load() && errors.Is(rerr, os.ErrDeadlineExceeded)) {
				c.readErr = rerr
			}
		}
		if c.clientSentClose {
			continue // nothing may follow a close frame
		}
		if ferr := c.frames.feed(chunk, c); ferr != nil {
			var ce *closeError
			if !errors.As(ferr, &ce) {
				ce = &closeError{closeInternalError, "Internal Server Error"}
			}
			c.cfg.Logger.Debug("closing the subscription connection", zap.Uint16("code", ce.code))
			c.terminate(ce.code, ce.reason)
		}
	}
}

func (c *filterConn) resetOut() {
	c.outPos = 0
	if cap(c.out) > keptOutBuffer {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
}

// control forwards a client control frame as is (re-masked).
func (c *filterConn) control(op byte, payload []byte) error {
	if op == opClose {
		c.clientSentClose = true
	}
	c.out = appendClientFrame(c.out, op, payload)
	return nil
}

// message decides on one client text message.
func (c *filterConn) message(msg []byte) error {
	m, err := decodeClientMessage(msg)
	if err != nil {
		return err
	}
	tokenInside := containsToken(msg, c.cfg.Token)
	switch m.Type {
	case msgConnectionInit:
		if c.initSeen {
			return &closeError{closeTooManyInits, "Too many initialisation requests"}
		}
		if tokenInside {
			return &closeError{closeBadRequest, "Request must not contain the bearer token"}
		}
		c.initSeen = true
		c.initTimer.Stop()
	case msgSubscribe:
		return c.subscribe(m, tokenInside)
	case msgComplete:
		if tokenInside {
			return &closeError{closeBadRequest, "Request must not contain the bearer token"}
		}
		c.subs.remove(*m.ID)
	default: // ping, pong
		if tokenInside {
			return &closeError{closeBadRequest, "Request must not contain the bearer token"}
		}
	}
	c.forward(m.Type, m.ID, m.Payload)
	return nil
}

// subscribe checks one subscribe message and forwards it or answers it
// with an error message.
func (c *filterConn) subscribe(m clientMessage, tokenInside bool) error {
	id := *m.ID
	// Operations only once the upstream has acknowledged the connection
	// (graphql-transport-ws: else close 4401). A subscribe sent before the
	// connection_ack reached the client would otherwise get its refusal
	// before the ack, or reach an upstream that has not acknowledged.
	if !c.initSeen || !c.acked.Load() {
		return &closeError{closeUnauthorized, "Unauthorized"}
	}
	if c.subs.has(id) {
		return &closeError{closeSubscriberExists, "Subscriber for " + id + " already exists"}
	}
	if !isObject(m.Payload) {
		return &closeError{closeBadRequest, "Invalid message received: payload must be an object"}
	}
	if tokenInside {
		c.refused(OutcomeBearer)
		return c.refuse(id, graphQLErrors("Request must not contain the bearer token", "BAD_REQUEST"))
	}
	forward, sub, errs := c.admit(c.ctx, m.Payload)
	if errs != nil {
		return c.refuse(id, errs)
	}
	if !c.subs.add(id, sub) {
		return nil // the connection ended meanwhile
	}
	c.forward(msgSubscribe, m.ID, forward)
	return nil
}

// refuse answers subscription id with an error message; the connection
// stays open.
func (c *filterConn) refuse(id string, errs []byte) error {
	c.cfg.Logger.Debug("subscription refused")
	frame := appendServerFrame(nil, opText, errorMessage(id, errs))
	if err := c.writer.inject(frame, false); err != nil {
		if errors.Is(err, errClientClosed) {
			return nil
		}
		return fmt.Errorf("wsproxy: answering a refused subscription: %w", err)
	}
	return nil
}

// forward queues a message for the upstream, re-encoded and masked.
func (c *filterConn) forward(typ string, id *string, payload []byte) {
	body := appendMessage(nil, typ, id, payload)
	c.out = appendClientFrame(c.out, opText, body)
}

// Write forwards the upstream's bytes to the client.
func (c *filterConn) Write(p []byte) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.cfg.Logger.Error("panic forwarding the upstream's messages", zap.String("panic_type", fmt.Sprintf("%T", v)))
			_ = c.Conn.Close()
			n, err = 0, errors.New("wsproxy: internal error forwarding to the client")
		}
	}()
	return c.writer.Write(p)
}

// Close ends the connection: the init timer, the watch and every slot held
// are released, and the client connection is closed.
func (c *filterConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.ending.Store(true)
		c.initTimer.Stop()
		c.cancel()
		if c.cfg.Watch != nil {
			c.cfg.Watch.Stop()
		}
		c.subs.closeAll()
		err = c.Conn.Close()
	})
	return err
}

// recoverCallback keeps a panic in a timer or watch callback from crashing
// the server: the connection is dropped.
func (c *filterConn) recoverCallback() {
	if v := recover(); v != nil {
		c.cfg.Logger.Error("panic in a subscription connection callback", zap.String("panic_type", fmt.Sprintf("%T", v)))
		_ = c.Conn.Close()
	}
}
