// Package schema embeds records.graphqls, the single source of truth for recordsd's GraphQL interface
// (also loaded by path by the gateway's graphql_guard).
package schema

import _ "embed"

// SDL is the text of records.graphqls.
//
//go:embed records.graphqls
var SDL string

// FileName is the schema file's name inside this directory.
const FileName = "records.graphqls"
