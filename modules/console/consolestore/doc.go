// Package consolestore keeps what the organization console (modules/console)
// stores in PostgreSQL beside the key store: one-time sign-in links,
// sessions and OIDC sign-ins in flight — plus the read-only queries its pages
// need (a page of keys with when each was last used, usage aggregated by
// hour or day, organizations). Tokens (links, sessions, OIDC states) are
// stored only as SHA-256 hashes. The audit log and the members' roles belong
// to the key store (keystore.Audit, keystore.RoleAdmin …), which owns the
// organizations and keys they are about (docs/design.md D60). Changes to keys
// and webhook endpoints do not live here: the console calls the key store and
// the webhooks service, the code paths the CLI and the API use
// (docs/design.md D34).
package consolestore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// Identity is who a sign-in proved: an email, an organization id ("" for an
// operator) and a role.
type Identity struct {
	Email string
	OrgID string
	Role  string
}

// ErrNotFound is returned for a token, organization or row that does not
// exist (or may not be seen).
var ErrNotFound = errors.New("consolestore: not found")

// newToken returns a random 256-bit token (URL-safe, unpadded) and its hash.
func newToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("consolestore: random: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, hashToken(tok), nil
}

// hashToken is what is stored for a token.
func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}
