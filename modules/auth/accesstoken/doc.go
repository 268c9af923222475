// Package accesstoken verifies OAuth 2.0 / OpenID Connect JWT access tokens
// of one issuer (RFC 9068, RFC 7519, RFC 7515) for civic_auth's jwt block,
// without Caddy, zap or Prometheus: the shell maps its Caddyfile options onto
// Config, calls Verify per request, writes an *Error's Status, Challenge and
// Body, and turns Stats into metrics (docs/identity.md; docs/design.md D46).
//
//   - config.go: the options, their defaults and Validate.
//   - fetch.go: discovery (OpenID Connect, then RFC 8414) and the HTTP rules
//     of every fetch: https or loopback http, no redirects, bounded bodies.
//   - jwks.go: the key set: RSA, EC P-256/384/521 and Ed25519 keys; a key
//     that cannot be used is ignored, never the set.
//   - keysource.go: the current set, its refresh by Cache-Control and on an
//     unknown kid (one fetch at a time, rate limited), the last good set
//     kept through an outage.
//   - token.go: the strict reading of header and payload golang-jwt lacks
//     (duplicate members, crit, typ, cty, claim types, date ranges).
//   - identity.go: the claim checks and the Identity (tier, organization,
//     key id); errors.go: the refusal kinds and their fixed strings.
//   - verify.go: Verify — the cache of verified tokens (SHA-256 of the
//     token → identity, until exp), the bound on concurrent verifications.
//
// Nothing of a token or a key reaches a log or an error text.
package accesstoken
