// Package request is the first step of graphql_guard's pipeline: it reads a
// GraphQL-over-HTTP request — the body within its size limit, the media
// type — and locates its members (query, operationName, variables,
// extensions, documentId) in a POST body, a WebSocket subscribe payload or a
// GET's URL query. The usual body is located in place without decoding;
// anything unusual goes through a strict decoder that gives the exact 400
// (*Error, docs/api.md "Errors"). It also finds the bearer token in the raw
// members and publishes the request as decoded (contract.GraphQLRequest,
// docs/design.md D40).
//
// Before it: the shell's method check. After it: the document step
// (package document) compiles the query text, the variables step (package
// variables) coerces the variables.
package request
