// Package auth is civicgate's bearer-key authentication: the Caddy app
// civic_auth (tier policy, key store, lookup cache, LISTEN worker) and the HTTP
// handler http.handlers.civic_auth (docs/design.md D2, D6, D8, D10). See README.md.
package auth

import "github.com/civicgate/civicgate/modules/auth/keystore"

// headerProblem says why an Authorization header was refused.
type headerProblem int

const (
	headerOK headerProblem = iota
	headerMissing
	headerMalformed
)

// ParseAuthorization extracts the key from an Authorization header value. The
// scheme is matched case-insensitively (RFC 9110 §11.1); exactly one space
// separates it from a token that must have the key format cg_<env>_<base62>.
func ParseAuthorization(v string, present bool) (string, headerProblem) {
	if !present {
		return "", headerMissing
	}
	const scheme = "bearer "
	if len(v) <= len(scheme) {
		return "", headerMalformed
	}
	for i := 0; i < len(scheme); i++ {
		c := v[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != scheme[i] {
			return "", headerMalformed
		}
	}
	tok := v[len(scheme):]
	if !keystore.WellFormed(tok) {
		return "", headerMalformed
	}
	return tok, headerOK
}
