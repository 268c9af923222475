// Package subscribe is graphql_guard's subscription side without Caddy:
// the credential watches its terminated sockets share (credwatch.go), and
// beneath it the graphql-transport-ws filter and terminator (wsproxy), the
// hub of terminated subscriptions (subhub) and the per-key slots in Redis
// (subslots). The guard's subscription shell (modules/gqlguard
// subscriptions.go, terminate*.go, keyslots.go) uses them (docs/design.md D61).
package subscribe
