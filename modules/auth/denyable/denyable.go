// Package denyable is the one rule of what the token deny list can hold
// (docs/design.md D64): how long a subject, token id or issuer may be and
// which bytes it may not contain. The deny list's store (keystore's
// Denial.Check, the table's CHECK constraints, `civicgate tokens`) and the
// access-token verifier (accesstoken's admission) both ask it, so every token
// the gateway admits carries a subject and a token id an operator can deny.
// It imports nothing but the standard library: neither side drags the other in.
package denyable

import (
	"fmt"
	"unicode/utf8"
)

// MaxValueLen is the bytes of a subject or token id the deny list holds.
const MaxValueLen = 512

// ValueProblem says why the deny list cannot hold v as a subject or token id
// ("is empty", "holds a control character", …); "" when it can.
func ValueProblem(v string) string { return TextProblem(v, 1, MaxValueLen) }

// TextProblem says why a text column of the deny list cannot hold s — it
// must be minLen..maxLen bytes of UTF-8 without an ASCII control character
// (the table's CHECK: no byte 0x00-0x1f or 0x7f) — and "" when it can.
func TextProblem(s string, minLen, maxLen int) string {
	switch {
	case len(s) < minLen:
		return "is empty"
	case len(s) > maxLen:
		return fmt.Sprintf("is %d bytes long; at most %d are allowed", len(s), maxLen)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return "holds a control character"
		}
	}
	return ""
}
