// Package wsproxy filters a graphql-transport-ws WebSocket (the protocol of
// the graphql-ws library) between a client and Caddy's reverse_proxy: every
// subscribe message is checked (bearer token, subscription limits, rate
// limit, GraphQL policy) before it reaches the upstream, and the exchange is
// ended when the caller's credential stops being valid.
//
// It is a library used by the graphql_guard handler, not a Caddy module:
// graphql_guard wraps the http.ResponseWriter with WrapResponseWriter before
// calling reverse_proxy, and reverse_proxy's Hijack then returns the
// filtering connection. See README.md for the behaviour table.
package wsproxy

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// Subprotocol is the only protocol filtered: "graphql-transport-ws".
const Subprotocol = "graphql-transport-ws"

// Checker decides on one subscribe message's payload: the raw JSON object
// {"query":…, "operationName":…, "variables":…, "extensions":…}.
type Checker interface {
	// CheckSubscribe returns the payload to forward upstream (the same slice
	// or a rewritten one, e.g. a persisted query resolved to its full text)
	// or, when refused, errs: the JSON array of GraphQL errors sent in the
	// protocol's error message payload. failed (nil: nothing to tell) is
	// called at most once, when the upstream ends the admitted subscription
	// with an error message (docs/design.md D83).
	CheckSubscribe(ctx context.Context, payload []byte) (forward []byte, errs []byte, failed func())
}

// Slots bounds concurrent subscriptions across connections (e.g. per API
// key); nil: unbounded.
type Slots interface {
	Acquire() bool
	Release()
}

// Config is what one filtering connection enforces.
type Config struct {
	// Checker decides on every subscribe payload; nil admits all.
	Checker Checker
	// InitTimeout: connection_init must arrive within it (default 10s),
	// else close 4408.
	InitTimeout time.Duration
	// MaxMessage is the largest client message once reassembled (default
	// 128 KiB), else close 1009.
	MaxMessage int64
	// MaxSubscriptions is the number of concurrent subscriptions per
	// connection (default 100); a subscribe over it gets an error message
	// with code SUBSCRIPTION_LIMIT and the connection stays open.
	MaxSubscriptions int
	// Slots is the per-key bound, same refusal as MaxSubscriptions.
	Slots Slots
	// Charger, when set, is charged for each subscribe before forwarding.
	Charger contract.Charger
	// Watch, when set, ends the connection with close 4403 when it fires;
	// it is stopped when the connection ends.
	Watch contract.CredentialWatch
	// Token is the caller's bearer token: a client message containing it is
	// not forwarded.
	Token string
	// WriteTimeout bounds how long a frame the filter writes to the client
	// (an error message, a close frame) may wait for the upstream to finish
	// its current frame and for the client to take it (default 10s); past it
	// the connection is dropped.
	WriteTimeout time.Duration
	// Refused, when set, is told of each subscribe the filter refuses by
	// itself (not the Checker's refusals): "bearer_in_request",
	// "subscription_limit", "rate_limited" or "internal_error" — e.g. to count
	// them with the caller's other outcomes.
	Refused func(outcome string)
	// Logger receives refusals and failures; it never sees message payloads
	// or the token. nil: no logs.
	Logger *zap.Logger
}

const (
	defaultInitTimeout      = 10 * time.Second
	defaultMaxMessage       = 128 << 10
	defaultMaxSubscriptions = 100
	defaultWriteTimeout     = 10 * time.Second
)

// withDefaults returns cfg with the zero values replaced by the defaults.
func (cfg Config) withDefaults() Config {
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = defaultInitTimeout
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = defaultMaxMessage
	}
	if cfg.MaxSubscriptions <= 0 {
		cfg.MaxSubscriptions = defaultMaxSubscriptions
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return cfg
}
