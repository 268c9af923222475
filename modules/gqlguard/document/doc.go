// Package document is the second step of graphql_guard's pipeline: it turns
// a query text into a compiled document, once, and keeps it in a bounded
// cache. Compiling lexes (token count and limit, string literals), parses,
// refuses documents whose validation would be superlinear (the safety
// valve), validates against the schema with gqlparser's rules (without
// suggestions when introspection is off), and prepares every operation:
// its measures (package analysis), its families and the coercion of its
// variables (package variables). A refused document keeps its refusal body,
// so a cache hit parses nothing either way (docs/design.md D12, D13).
//
// Before it: the request step (package request) located the query text.
// After it: the shell selects the operation, checks transport, trust and
// policy, and the variables step coerces the request's variables.
package document
