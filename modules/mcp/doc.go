// Package mcp is the civic_mcp Caddy handler: the Model Context Protocol
// endpoint (Streamable HTTP, revision 2026-07-28 without sessions beside
// revision 2025-11-25 with them, 2025-06-18 accepted) whose
// tools are the GraphQL operations of a tool manifest (package tooldef), each
// tools/call run as a GraphQL POST through the rest of the route — the same
// rate limit, guard, cache and upstream as POST /v1/graphql (docs/mcp.md
// "Serving the tools", docs/design.md D48, D50).
//
// It is a thin shell over the official go-sdk's StreamableHTTPHandler: it
// checks what it can answer with civicgate's JSON bodies first (caller,
// Origin, session ownership and caps, size, batches), binds every session to
// the key that opened it and to that key's tier, and gives each tool call the
// live HTTP request it arrived on (the SDK runs tool handlers in the
// session's context, not the call's).
package mcp
