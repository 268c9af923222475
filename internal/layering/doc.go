// Package layering holds the test that keeps the repository's two products
// apart (docs/design.md D1): the records service (backend/, cmd/recordsd)
// imports nothing of modules/ but modules/contract, and modules/ never
// imports backend/. It has no code of its own.
package layering
