// Package libraryclient is how the example's tests talk to the library API,
// directly or through civicgate: github.com/hasura/go-graphql-client for
// queries, mutations and graphql-transport-ws subscriptions, and a small
// graphql-sse (distinct connections) event reader for net/http.
package libraryclient
