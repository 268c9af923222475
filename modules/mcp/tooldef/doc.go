// Package tooldef turns GraphQL operations into Model Context Protocol tools
// (docs/mcp.md, docs/design.md D48): it reads a trusted-documents manifest
// (Apollo's persisted query manifest, the format graphql_guard reads, with
// optional title, description, tool and arguments members per operation),
// checks each operation against the schema and the guard's families with the
// guard's own compiler (package gqlguard/document), and builds per tool its
// name, its JSON Schema 2020-12 input and output schemas, an argument checker
// that runs before anything goes upstream, the GraphQL request body a call
// sends, and the rendering of the answer as a tool result.
//
// It imports no Caddy: the Caddy module that serves /v1/mcp builds on it.
package tooldef
