// Package analysis is the third step of graphql_guard's pipeline: it
// measures the operations of a parsed, validated document — depth, aliases,
// root fields, directives, the cost plan (with the schema's @cost and
// @listSize, docs/design.md D12, D24) — and attributes root fields to
// families (D22). Every fragment is measured once and merged whole wherever
// it is spread, so the work is linear in the document.
//
// Before it: the document step (package document) lexes, parses and
// validates, then measures each operation here once per compiled document.
// After it: the variables step (package variables) evaluates a cost that
// depends on the request's variables; the shell decides the limits and
// entitlements from the Measures.
package analysis
