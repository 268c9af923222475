package accesstoken

import (
	"net/http"

	"github.com/civicgate/civicgate/modules/contract"
)

// Kind is why a token was refused. Each kind has a fixed status, RFC 6750
// error code and error_description (docs/identity.md "Errors"): none of them
// holds anything of the token, so they may be written to any client and log.
type Kind uint8

// The kinds of refusal. The zero Kind is not one.
const (
	_ Kind = iota
	// Malformed: not three base64url segments of JSON objects, a duplicate
	// member name, a registered claim of the wrong type (exp as a string, a
	// NumericDate out of range), a crit header, invalid UTF-8.
	Malformed
	// TooLarge: longer than Config.MaxTokenSize, refused before parsing.
	TooLarge
	// DisallowedAlgorithm: alg not in Config.Algorithms (none and HS* never
	// are), or not the algorithm of the key that kid names.
	DisallowedAlgorithm
	// UnknownKey: no key of the issuer's set has this kid, after one refresh
	// of the set (or the refresh was rate limited or failed).
	UnknownKey
	// BadSignature: the key was found and the signature does not verify.
	BadSignature
	// WrongIssuer: iss missing or not exactly Config.Issuer.
	WrongIssuer
	// WrongAudience: aud missing or without Config.Audience.
	WrongAudience
	// Expired: exp + leeway has passed.
	Expired
	// NotYetValid: nbf or iat lies more than the leeway in the future.
	NotYetValid
	// NotAnAccessToken: an ID token, a nested JWT, or a typ other than
	// at+jwt or JWT (docs/identity.md "Which tokens are access tokens").
	NotAnAccessToken
	// MissingClaim: exp, the subject claim or the organization claim is
	// absent or empty.
	MissingClaim
	// MissingTier: no tier claim and no matching scope, and no DefaultTier.
	MissingTier
	// UnknownTier: the tier claim names a tier the gateway does not define
	// (or is not a string).
	UnknownTier
	// InsufficientScope: the request needs a family whose RequireScopes scope
	// the token lacks (Verifier.RequireFamily; never returned by Verify).
	InsufficientScope

	numKinds
)

type kindInfo struct {
	name        string // metric label and Error text
	status      int
	code        string // RFC 6750 error code
	description string // RFC 6750 error_description and the body's "error"
}

// kinds is indexed by Kind. A description is a quoted-string of
// WWW-Authenticate: printable ASCII without " or \ (TestKindStrings).
var kinds = [numKinds]kindInfo{
	Malformed:           {"malformed", http.StatusUnauthorized, "invalid_token", "Malformed access token"},
	TooLarge:            {"too_large", http.StatusUnauthorized, "invalid_token", "Access token too large"},
	DisallowedAlgorithm: {"disallowed_algorithm", http.StatusUnauthorized, "invalid_token", "Access token signing algorithm not accepted"},
	UnknownKey:          {"unknown_key", http.StatusUnauthorized, "invalid_token", "Access token signed by an unknown key"},
	BadSignature:        {"bad_signature", http.StatusUnauthorized, "invalid_token", "Invalid access token signature"},
	WrongIssuer:         {"wrong_issuer", http.StatusUnauthorized, "invalid_token", "Access token from an untrusted issuer"},
	WrongAudience:       {"wrong_audience", http.StatusUnauthorized, "invalid_token", "Access token not issued for this API"},
	Expired:             {"expired", http.StatusUnauthorized, "invalid_token", "Access token expired"},
	NotYetValid:         {"not_yet_valid", http.StatusUnauthorized, "invalid_token", "Access token not yet valid"},
	NotAnAccessToken:    {"not_an_access_token", http.StatusUnauthorized, "invalid_token", "Token is not an access token"},
	MissingClaim:        {"missing_claim", http.StatusUnauthorized, "invalid_token", "Access token lacks a required claim"},
	MissingTier:         {"missing_tier", http.StatusForbidden, "insufficient_scope", "Access token grants no tier"},
	UnknownTier:         {"unknown_tier", http.StatusForbidden, "insufficient_scope", "Access token names an unknown tier"},
	InsufficientScope:   {"insufficient_scope", http.StatusForbidden, "insufficient_scope", "Access token lacks the scope this endpoint family requires"},
}

// Built once: a refusal writes them without allocating.
var (
	kindBodies     [numKinds][]byte
	kindChallenges [numKinds]string
	kindErrors     [numKinds]*Error
)

func init() {
	for k := Kind(1); k < numKinds; k++ {
		kindBodies[k] = contract.ErrorBody(kinds[k].description)
		kindChallenges[k] = challenge(k, "")
		kindErrors[k] = &Error{Kind: k, challenge: kindChallenges[k]}
	}
}

func challenge(k Kind, scope string) string {
	c := `error="` + kinds[k].code + `", error_description="` + kinds[k].description + `"`
	if scope != "" {
		c += `, scope="` + scope + `"`
	}
	return c
}

func (k Kind) valid() bool { return k > 0 && k < numKinds }

// String is the kind's snake_case name ("bad_signature"), for metric labels.
func (k Kind) String() string {
	if !k.valid() {
		return "unknown"
	}
	return kinds[k].name
}

// Status is the HTTP status to answer: 401, or 403 for MissingTier,
// UnknownTier and InsufficientScope.
func (k Kind) Status() int {
	if !k.valid() {
		return http.StatusUnauthorized
	}
	return kinds[k].status
}

// Code is the RFC 6750 error code: invalid_token or insufficient_scope.
func (k Kind) Code() string {
	if !k.valid() {
		return "invalid_token"
	}
	return kinds[k].code
}

// Description is the fixed RFC 6750 error_description, also the "error" of
// the JSON body.
func (k Kind) Description() string {
	if !k.valid() {
		return kinds[Malformed].description
	}
	return kinds[k].description
}

// Body is {"error":"<Description>"}, the shape of docs/api.md "Errors".
// Shared: read-only, never modify it.
func (k Kind) Body() []byte {
	if !k.valid() {
		return kindBodies[Malformed]
	}
	return kindBodies[k]
}

// Error is a refused token. Verify returns one of a fixed set of values (no
// allocation on refusal); compare Kind, never the pointer.
type Error struct {
	Kind Kind
	// Scope is the scope the request lacks (InsufficientScope only).
	Scope     string
	challenge string
}

// Error names the kind only: nothing of the token.
func (e *Error) Error() string { return "access token refused: " + e.Kind.String() }

// Challenge is the parameters of the Bearer challenge after the realm:
// error="…", error_description="…"[, scope="…"]. The shell writes
// WWW-Authenticate: Bearer realm="civicgate", <Challenge>.
func (e *Error) Challenge() string {
	if e.challenge == "" {
		return challenge(e.Kind, e.Scope)
	}
	return e.challenge
}

// refusal returns the shared *Error of k.
func refusal(k Kind) *Error { return kindErrors[k] }
