// Package layering holds the tests that keep the repository's structure: the
// two products stay apart (docs/design.md D1) — the records service
// (backend/, cmd/recordsd) imports nothing of modules/ but modules/contract,
// and modules/ never imports backend/ —, within modules/ imports go
// downward only (levels_test.go, docs/design.md D60), and Go comments and
// Markdown files cite what is in the repository (docs/design.md D<n>, a doc section, the
// code), never the issue tracker (comments_test.go). It has no code of its own; every test needs no
// service.
package layering
