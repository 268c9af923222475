package wsproxy

import (
	"context"
	"crypto/sha1" //nolint:gosec // RFC 6455 section 4.2.2 names SHA-1 for Sec-WebSocket-Accept
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/subhub"
)

// The terminator: graphql_guard answers the WebSocket itself (RFC 6455,
// graphql-transport-ws) and hands every admitted subscription to an
// Upstream (subhub), instead of tunnelling the socket through reverse_proxy.
// The protocol rules, close codes and refusals are the filter's (README.md);
// the closes below are its own.

// Close codes of the terminator beyond the filter's (docs/api.md).
const (
	closeGoingAway     = 1001 // the gateway is shutting down or reloading
	closeSlowConsumer  = 1013 // the client's send queue is full ("Try Again Later")
	closePongTimeout   = 4504 // no pong within PongTimeout of a ping
	closeGraceOnFinish = 2 * time.Second
)

// Upstream carries a terminated socket's admitted subscriptions.
type Upstream interface {
	// Subscribe starts (or joins) the subscription of the checked payload;
	// stop leaves it.
	Subscribe(payload []byte, sink subhub.Sink) (stop func(), err error)
}

// Revocations follows the caller's credential for a terminated socket
// without a goroutine of the socket's own.
type Revocations interface {
	// Follow calls end with the client-facing reason once the credential
	// stops being valid; stop ends the following.
	Follow(end func(reason string)) (stop func())
}

// Observer is told about terminated sockets (metrics, spans); nil: nothing.
type Observer interface {
	Sockets(delta int)
	Subscriptions(delta int)
	SlowConsumerDropped()
}

// TerminateConfig is what one terminated socket enforces: the filter's
// Config (Checker, limits, Charger, Token …; its Watch is not used: see
// Revocations) and the terminator's bounds.
type TerminateConfig struct {
	Config
	// Context is what the checks run in for the socket's life (values such
	// as the trace span; never cancelled). Default: context.Background().
	// Not the upgrade request's context: that keeps net/http's connection
	// state, buffers included, alive for as long as the socket.
	Context     context.Context
	Upstream    Upstream
	Revocations Revocations // nil: nothing to follow
	// Keepalive is the interval of the server's ping frames (default 30s);
	// no pong within PongTimeout (default 10s) closes 4504.
	Keepalive, PongTimeout time.Duration
	// MaxLifetime ends each subscription after it with an error message of
	// code SUBSCRIPTION_EXPIRED (0: none).
	MaxLifetime time.Duration
	// SendBuffer is the number of messages queued for the client, plus one
	// per active subscription, before it is dropped as slow with close 1013
	// (default 64).
	SendBuffer int
	Observer   Observer
}

func (cfg TerminateConfig) withDefaults() TerminateConfig {
	cfg.Config = cfg.Config.withDefaults()
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = 30 * time.Second
	}
	if cfg.PongTimeout <= 0 {
		cfg.PongTimeout = 10 * time.Second
	}
	if cfg.SendBuffer <= 0 {
		cfg.SendBuffer = 64
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	return cfg
}

type nopObserver struct{}

func (nopObserver) Sockets(int)          {}
func (nopObserver) Subscriptions(int)    {}
func (nopObserver) SlowConsumerDropped() {}

// websocketGUID is RFC 6455's magic string for Sec-WebSocket-Accept.
const websocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// HandshakeError is a refused upgrade: the status and message to answer.
type HandshakeError struct {
	Status  int
	Message string
}

func (e *HandshakeError) Error() string { return e.Message }

// Terminate completes the WebSocket handshake of r (which IsUpgrade and
// Offers graphql-transport-ws), hijacks the connection and serves it on one
// reader goroutine; it returns once the socket is handed to that goroutine.
// A *HandshakeError is a request to refuse (nothing was written).
func Terminate(w http.ResponseWriter, r *http.Request, cfg TerminateConfig, reg *Sockets) error {
	if r.Method != http.MethodGet || r.ProtoMajor != 1 {
		return &HandshakeError{http.StatusBadRequest, "WebSocket upgrade must be an HTTP/1.1 GET"}
	}
	if r.Header.Get("Sec-Websocket-Version") != "13" {
		return &HandshakeError{http.StatusBadRequest, "Sec-WebSocket-Version must be 13"}
	}
	key := r.Header.Get("Sec-Websocket-Key")
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 16 {
		return &HandshakeError{http.StatusBadRequest, "Invalid Sec-WebSocket-Key"}
	}
	//nolint:bodyclose // not a client response
	raw, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fmt.Errorf("wsproxy: hijacking the connection: %w", err)
	}
	// net/http's bufio buffers (4 KiB each) are dropped: what the server
	// read past the request is copied out and fed first.
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ := brw.Reader.Peek(n) // n bytes are buffered: no error
		early = append([]byte(nil), buffered...)
	}
	sum := sha1.Sum([]byte(key + websocketGUID)) //nolint:gosec // RFC 6455
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\nSec-WebSocket-Protocol: " + Subprotocol + "\r\n\r\n"
	cfg = cfg.withDefaults()
	_ = raw.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
	if _, err := raw.Write([]byte(resp)); err != nil {
		_ = raw.Close()
		return fmt.Errorf("wsproxy: sending the switching protocols response: %w", err)
	}
	_ = raw.SetWriteDeadline(time.Time{})
	_ = raw.SetReadDeadline(time.Time{}) // the server's read timeouts are for requests
	raw = underHijackWrapper(raw)
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	c := newServerConn(ctx, raw, early, cfg, reg)
	go c.readLoop()
	return nil
}

// underHijackWrapper returns the connection inside the wrapper a server's
// Hijack may return: Caddy's (caddyhttp.hijackedConn) adds every byte read
// and written to its response recorder without a lock, for the access log
// that is written when the handler returns — and a terminated socket goes
// on reading and writing long after that. The 101 response above went
// through the wrapper, so the access log still counts it. The wrapper is an
// unexported type whose net.Conn is an embedded (exported) field, so it is
// read by reflection, once per socket; any other connection is returned as
// it is.
func underHijackWrapper(c net.Conn) net.Conn {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return c
	}
	f := v.Elem().FieldByName("Conn")
	if !f.IsValid() || f.Type() != reflect.TypeFor[net.Conn]() || f.IsNil() {
		return c
	}
	if inner, ok := f.Interface().(net.Conn); ok {
		return inner
	}
	return c
}

// Sockets is the set of a handler's terminated sockets, closed 1001 when
// the handler is cleaned up (config reload, shutdown).
type Sockets struct {
	mu     sync.Mutex
	conns  map[*serverConn]struct{}
	closed bool
}

func (s *Sockets) add(c *serverConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*serverConn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Sockets) remove(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Len is the number of open sockets.
func (s *Sockets) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// CloseAll sends every socket a 1001 close; later sockets are refused the
// same way.
func (s *Sockets) CloseAll() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.closeWith(closeGoingAway, "Server shutting down")
	}
}
