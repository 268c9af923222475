// Package library is the example "other GraphQL backend" of
// examples/other-backend: a lending library served by gqlgen with queries,
// mutations and a loanEvents subscription, over GET, POST, multipart/mixed
// (@defer), graphql-sse and graphql-transport-ws. It keeps everything in
// memory. generated.go and models_gen.go are gqlgen's output (gqlgen.yml);
// the rest is hand-written.
package library

//go:generate go run github.com/99designs/gqlgen generate --config gqlgen.yml
