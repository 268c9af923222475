// Package graph is recordsd's gqlgen executable schema (generated.go, from ../schema/records.graphqls via
// ../gqlgen.yml) and its resolvers, which delegate to backend/store.
package graph

//go:generate go tool gqlgen generate --config ../gqlgen.yml
