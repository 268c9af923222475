// Package subscribe is graphql_guard's subscription shell (docs/design.md
// D61): the guard hands it WebSocket upgrades and admitted graphql-sse
// streams (Shell), and it needs of the guard only Pipeline — a subscribe
// message checked by the request pipeline a POST goes through, the request
// metric. It tunnels or terminates the sockets (terminate.go), serves
// terminated streams (terminate_sse.go), bounds subscriptions per key
// (keyslots.go) and shares credential watches (credwatch.go); beneath it are
// the graphql-transport-ws filter and terminator (wsproxy), the hub of
// terminated subscriptions (subhub) and the per-key slots in Redis
// (subslots).
//
// It imports Caddy's core package only, no caddyhttp: caddy.Context to
// provision (the module's logger, the metrics registry), caddy.Replacer to
// expand upstream_header values, caddy.UsagePool to share the Redis slot
// store across reloads, and caddy.Duration in Config; the next handler is
// Next, which caddyhttp.Handler satisfies.
package subscribe
