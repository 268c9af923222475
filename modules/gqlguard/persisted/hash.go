// Package persisted holds the documents that the graphql_guard handler serves
// by hash instead of by text: Apollo's Automatic Persisted Queries (APQ),
// registered by clients at run time into a Store (bounded memory, optionally
// shared through Redis), and trusted documents, an operation allow-list loaded
// from a manifest file (see README.md for the formats and refusals).
//
// It is a library, not a Caddy module: the only package-level variable is the
// usage pool of Redis clients that survives `caddy reload`.
package persisted

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Hash is the SHA-256 of a document's exact text.
type Hash [32]byte

// DocumentIDPrefix starts a GraphQL-over-HTTP persisted document id that is a
// SHA-256 hash ("sha256:<64 hex>").
const DocumentIDPrefix = "sha256:"

// ErrBadHash is wrapped by every ParseHash error.
var ErrBadHash = errors.New("not a SHA-256 hash")

// maxEcho bounds how much of a caller's input an error message repeats.
const maxEcho = 80

// Sum returns the SHA-256 of query.
func Sum(query string) Hash {
	return sha256.Sum256([]byte(query))
}

// String returns the hash as 64 lowercase hexadecimal characters.
func (h Hash) String() string {
	return hex.EncodeToString(h[:])
}

// ParseHash parses 64 hexadecimal characters (either case). It allocates
// nothing when s is valid; an error repeats at most 80 characters of s.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return Hash{}, fmt.Errorf("persisted: hash %q has %d characters, want 64 hexadecimal: %w", clip(s), len(s), ErrBadHash)
	}
	for i := 0; i < len(h); i++ {
		hi, ok1 := hexValue(s[2*i])
		lo, ok2 := hexValue(s[2*i+1])
		if !ok1 || !ok2 {
			return Hash{}, fmt.Errorf("persisted: hash %q is not hexadecimal: %w", clip(s), ErrBadHash)
		}
		h[i] = hi<<4 | lo
	}
	return h, nil
}

// ParseDocumentID parses a GraphQL-over-HTTP document id "sha256:<64 hex>".
// Any other shape (no prefix, another algorithm, a bad hash) is not ok.
func ParseDocumentID(s string) (Hash, bool) {
	rest, found := strings.CutPrefix(s, DocumentIDPrefix)
	if !found {
		return Hash{}, false
	}
	h, err := ParseHash(rest)
	if err != nil {
		return Hash{}, false
	}
	return h, true
}

// looksLikeHash reports whether s is exactly 64 hexadecimal characters.
func looksLikeHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if _, ok := hexValue(s[i]); !ok {
			return false
		}
	}
	return true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// clip returns at most maxEcho bytes of s, marking a cut with "…".
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return s[:maxEcho] + "…"
}

// quote is %q of at most maxEcho bytes of s.
func quote(s string) string {
	return fmt.Sprintf("%q", clip(s))
}
