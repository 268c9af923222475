// Package subhub multiplexes the subscriptions graphql_guard terminates onto
// a few upstream graphql-transport-ws connections: one per identity scope,
// carrying many subscriptions by gateway-assigned ids, with identical
// subscriptions of one dedup scope sharing a single upstream subscription
// whose events are fanned out to every subscriber (docs/api.md
// "Subscriptions"). It imports no Caddy.
package subhub

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Sink is one subscriber of the hub: a client subscription.
type Sink interface {
	// Next delivers one event's payload (shared by every subscriber of the
	// group: read-only). It is called from the upstream connection's reader
	// goroutine, in event order, without the hub's locks: it must not block
	// (a bounded non-blocking write is fine) and must not call back into the
	// hub. It may be called once more just after the subscriber left; it
	// then drops the event. false: the subscriber is gone (dropped as slow)
	// and will stop its subscription itself.
	Next(payload []byte) bool
	// End ends the subscription: errs is the JSON array of GraphQL errors of
	// an upstream error message (or the hub's own, e.g. UPSTREAM_UNAVAILABLE),
	// nil for the upstream's complete. Called once, without locks held.
	End(errs []byte)
}

// Scope says which upstream connection carries a subscription and with
// whom it may be shared.
type Scope struct {
	// Identity names the upstream connection: subscriptions of different
	// identities never share a socket.
	Identity string
	// Dedup, when not empty, lets identical subscriptions of the same Dedup
	// value share one upstream subscription. Empty: no sharing.
	Dedup string
	// Header returns the upstream handshake's headers; called when the
	// first subscriber of the identity opens the connection, and on every
	// reconnect for a subscriber the connection still carries (a fresh
	// identity assertion of someone still subscribed).
	Header func() (http.Header, error)
	// Trace, when set, is the context whose span parents the spans of the
	// upstream connection this subscriber opens (Observer.UpstreamDial); only
	// the first subscriber of an identity opens one. It should carry nothing
	// else: the connection keeps it for its reconnects.
	Trace context.Context
}

// Observer is told what the hub does (metrics, spans); nil methods are not
// needed: the hub uses a no-op Observer when Config.Observer is nil.
type Observer interface {
	// UpstreamDial is called before each dial, with the Scope.Trace of the
	// subscriber that opened the connection (context.Background() when
	// none); done is called with its result.
	UpstreamDial(trace context.Context, reconnect bool) (done func(err error))
	// UpstreamLost reports an established connection that failed (a
	// reconnect follows).
	UpstreamLost(err error)
	// UpstreamConnections changes the number of open upstream connections.
	UpstreamConnections(delta int)
	// Groups changes the number of upstream subscriptions (groups).
	Groups(delta int)
	// FanOut records how many subscribers one event went to.
	FanOut(n int)
}

// Config is what every upstream connection of a hub uses.
type Config struct {
	// URL is the upstream's graphql-transport-ws endpoint (ws:// or wss://).
	URL string
	// DialTimeout bounds the dial and the connection_ack (default 10s).
	DialTimeout time.Duration
	// WriteTimeout bounds one write to the upstream (default 10s).
	WriteTimeout time.Duration
	// ReadLimit is the largest upstream message (default 16 MiB).
	ReadLimit int64
	// MinBackoff and MaxBackoff bound the reconnect delay, doubled per
	// failed attempt with ±50% jitter (defaults 100ms and 5s).
	MinBackoff, MaxBackoff time.Duration
	// MaxRetries is how many consecutive failed dials end every subscription
	// of the connection with UPSTREAM_UNAVAILABLE (default 8).
	MaxRetries int
	// Observer is told of dials, losses, groups and fan-outs (metrics and
	// logs: the hub logs nothing itself).
	Observer Observer
}

func (c Config) withDefaults() Config {
	if c.DialTimeout <= 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.ReadLimit <= 0 {
		c.ReadLimit = 16 << 20
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(5*time.Second, c.MinBackoff)
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 8
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

// UnavailableErrors is the errors payload subscribers get when the upstream
// could not be reached again within Config.MaxRetries.
var UnavailableErrors = []byte(`[{"message":"Subscription upstream unavailable","extensions":{"code":"UPSTREAM_UNAVAILABLE"}}]`)

// ErrClosed: the hub was closed.
var ErrClosed = errors.New("subhub: closed")

// Hub holds the upstream connections of one graphql_guard.
type Hub struct {
	cfg Config

	mu     sync.Mutex
	conns  map[string]*upstreamConn // by Scope.Identity
	closed bool
}

// New returns a hub that dials cfg.URL on the first subscription.
func New(cfg Config) *Hub {
	return &Hub{cfg: cfg.withDefaults(), conns: make(map[string]*upstreamConn)}
}

// Subscribe joins sink to the upstream subscription of payload (a checked
// subscribe payload) in scope, starting it when none exists. stop leaves
// the subscription (idempotent); the last subscriber leaving completes it
// upstream.
func (h *Hub) Subscribe(scope Scope, payload []byte, sink Sink) (stop func(), err error) {
	key := ""
	if scope.Dedup != "" {
		if key, err = groupKey(scope.Dedup, payload); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	u := h.conns[scope.Identity]
	opened := u == nil
	if opened {
		u = newUpstreamConn(h, scope.Identity, scope.Trace)
		h.conns[scope.Identity] = u
	}
	u.mu.Lock()
	g := u.groups[key]
	if key == "" || g == nil {
		u.nextID++
		g = &group{id: strconv.FormatUint(u.nextID, 36), key: key, payload: append([]byte(nil), payload...)}
		u.byID[g.id] = g
		if key != "" {
			u.groups[key] = g
		}
		h.cfg.Observer.Groups(1)
	}
	m := &member{sink: sink, header: scope.Header}
	g.members = append(g.members, m)
	u.mu.Unlock()
	h.mu.Unlock()
	if opened {
		// Dialled only now that its first subscriber is a member: the
		// handshake asserts a present subscriber's identity (memberHeader),
		// never none.
		go u.run()
	}
	u.sendPending()
	var once sync.Once
	return func() { once.Do(func() { u.leave(g, m) }) }, nil
}

// Close ends every upstream connection; subscribers are not told (their
// client sockets are being closed by the caller).
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	conns := h.conns
	h.conns = map[string]*upstreamConn{}
	h.mu.Unlock()
	for _, u := range conns {
		u.cancel()
	}
}

// group is one upstream subscription and the subscribers sharing it.
type group struct {
	id        string // the gateway-assigned upstream id
	key       string // "" when not deduplicated
	payload   []byte
	members   []*member
	sentEpoch uint64 // the connection epoch its subscribe was sent in
	ended     bool
}

type member struct {
	sink   Sink
	header func() (http.Header, error) // its Scope.Header
}

type nopObserver struct{}

func (nopObserver) UpstreamDial(context.Context, bool) func(error) { return func(error) {} }
func (nopObserver) UpstreamConnections(int)                        {}
func (nopObserver) Groups(int)                                     {}
func (nopObserver) FanOut(int)                                     {}
func (nopObserver) UpstreamLost(error)                             {}
