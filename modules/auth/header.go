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
	tok, problem := parseBearer(v, present)
	if problem != headerOK {
		return "", problem
	}
	if !keystore.WellFormed(tok) {
		return "", headerMalformed
	}
	return tok, headerOK
}

// parseBearer extracts the credential of a Bearer Authorization header value
// whatever it is (an API key or an access token): the scheme,
// case-insensitive, one space, then RFC 6750's b64token (ALPHA / DIGIT /
// "-" / "." / "_" / "~" / "+" / "/", then "=" padding).
func parseBearer(v string, present bool) (string, headerProblem) {
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
	if !b64token(tok) {
		return "", headerMalformed
	}
	return tok, headerOK
}

// b64token reports whether s is an RFC 6750 b64token.
func b64token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
