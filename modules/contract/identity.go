package contract

// The identity assertion (docs/design.md D9): the gateway asserts who is
// calling as a short-lived HS256 JWT in the X-Civic-Identity request header,
// and the upstream verifies it with the same shared secret. The bearer token
// itself never leaves the gateway. civic_auth signs (SignIdentity); recordsd,
// or any upstream, verifies (VerifyIdentity).

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Constants of the identity assertion.
const (
	// IdentityHeader is the request header that carries the assertion upstream.
	IdentityHeader = "X-Civic-Identity"
	// IdentityIssuer is the iss claim of every assertion.
	IdentityIssuer = "civicgate"
	// IdentityMaxTTL is the longest lifetime an assertion may have.
	IdentityMaxTTL = 60 * time.Second
	// IdentityMinSecretLen is the shortest shared secret accepted, in bytes.
	IdentityMinSecretLen = 32
)

// Claims is what the gateway asserts about a request's caller.
type Claims struct {
	// Org is the organization that owns the key.
	Org string `json:"org"`
	// Tier is the key's tier, e.g. "free" or "enterprise".
	Tier string `json:"tier"`
	// Env is the key's environment, "live" or "test".
	Env string `json:"env,omitempty"`
	// Families are the endpoint families the caller's tier is entitled to at
	// the moment of signing. An upstream that checks entitlements itself
	// (defence in depth behind the gateway's own check) refuses anything
	// outside them; a missing claim means no family at all.
	Families []string `json:"fam"`
	jwt.RegisteredClaims
}

// Caller is what SignIdentity asserts: the key and what it is entitled to.
type Caller struct {
	KeyID    string
	Org      string
	Tier     string
	Env      string
	Families []string
}

// Entitled reports whether the assertion grants family.
func (c *Claims) Entitled(family string) bool {
	for _, f := range c.Families {
		if f == family {
			return true
		}
	}
	return false
}

// KeyID is the key the request was made with (the sub claim).
func (c *Claims) KeyID() string { return c.Subject }

// ErrSecretTooShort is returned for a shared secret under
// IdentityMinSecretLen bytes.
var ErrSecretTooShort = fmt.Errorf("identity: shared secret must be at least %d bytes", IdentityMinSecretLen)

// SignIdentity returns a compact JWT asserting the caller (key, org, tier, env and
// families), valid from now for ttl (at most IdentityMaxTTL).
func SignIdentity(secret []byte, c Caller, now time.Time, ttl time.Duration) (string, error) {
	if len(secret) < IdentityMinSecretLen {
		return "", ErrSecretTooShort
	}
	if ttl <= 0 || ttl > IdentityMaxTTL {
		return "", fmt.Errorf("identity: ttl %s outside (0, %s]", ttl, IdentityMaxTTL)
	}
	fams := c.Families
	if fams == nil {
		fams = []string{}
	}
	claims := Claims{
		Org:      c.Org,
		Tier:     c.Tier,
		Env:      c.Env,
		Families: fams,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    IdentityIssuer,
			Subject:   c.KeyID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("identity: sign: %w", err)
	}
	return tok, nil
}

// ErrInvalidIdentity is wrapped by every verification failure.
var ErrInvalidIdentity = errors.New("identity: invalid assertion")

// VerifyIdentity checks an assertion's signature (HS256 only), issuer, expiry and
// lifetime at time now, and returns its claims.
func VerifyIdentity(secret []byte, token string, now time.Time) (*Claims, error) {
	if len(secret) < IdentityMinSecretLen {
		return nil, ErrSecretTooShort
	}
	var claims Claims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(IdentityIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	_, err := parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return secret, nil })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidIdentity, err)
	}
	if claims.Subject == "" || claims.IssuedAt == nil {
		return nil, fmt.Errorf("%w: missing sub or iat", ErrInvalidIdentity)
	}
	if claims.ExpiresAt.Sub(claims.IssuedAt.Time) > IdentityMaxTTL {
		return nil, fmt.Errorf("%w: lifetime over %s", ErrInvalidIdentity, IdentityMaxTTL)
	}
	return &claims, nil
}
