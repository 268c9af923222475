package subscribe

import "github.com/caddyserver/caddy/v2"

// Config bounds long-lived exchanges (docs/design.md D22): graphql_guard's
// subscriptions { … } block.
type Config struct {
	// MaxPerConnection bounds the subscriptions open on one WebSocket
	// (default 100).
	MaxPerConnection int `json:"max_per_connection,omitempty"`
	// MaxPerKey bounds the subscriptions open per API key ({civic.key_id})
	// on this gateway instance — across instances with SharedSlots — over
	// WebSockets and event streams together (default 1000).
	MaxPerKey int `json:"max_per_key,omitempty"`
	// InitTimeout is how long a WebSocket may wait before connection_init
	// (default 10s).
	InitTimeout caddy.Duration `json:"init_timeout,omitempty"`
	// SharedSlots ("redis", "key_prefix") makes MaxPerKey hold across
	// gateway instances (keyslots.go).
	SharedSlots
	// Upstream, a ws:// or wss:// graphql-transport-ws endpoint, makes the
	// guard terminate WebSockets itself and multiplex their subscriptions
	// onto a few sockets to it (docs/design.md D54); empty: the socket is
	// tunnelled through the next handler.
	Upstream string `json:"upstream,omitempty"`
	// UpstreamHeaders are the upstream handshake's headers (values are
	// placeholders, read for the first subscriber of a scope); never
	// Authorization or Cookie. X-Civic-Identity is signed fresh per dial.
	UpstreamHeaders map[string]string `json:"upstream_headers,omitempty"`
	// Dedup is the scope within which identical subscriptions share one
	// upstream subscription: families, org, key or off (default).
	Dedup string `json:"dedup,omitempty"`
	// MaxLifetime ends a subscription after it (error SUBSCRIPTION_EXPIRED);
	// 0: none.
	MaxLifetime caddy.Duration `json:"max_lifetime,omitempty"`
	// Keepalive is the interval of the server's pings (default 30s);
	// PongTimeout closes 4504 a socket that does not answer (default 10s).
	Keepalive   caddy.Duration `json:"keepalive,omitempty"`
	PongTimeout caddy.Duration `json:"pong_timeout,omitempty"`
	// SendBuffer is the messages queued per client socket before it is
	// dropped as slow with close 1013 (default 64).
	SendBuffer int `json:"send_buffer,omitempty"`
}
