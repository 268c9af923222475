package accesstoken

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/civicgate/civicgate/modules/auth/denyable"
)

// Identity is the caller a verified token names. Its slices are shared with
// the verification cache: read-only.
type Identity struct {
	// Subject is the SubjectClaim's value (sub by default).
	Subject string
	// Organization is the OrgClaim's value, or Issuer + "|" + Subject
	// without OrgClaim (every subject its own organization).
	Organization string
	// Tier is one of Config.Tiers.
	Tier string
	// Scopes are the token's scope and scp values, each once, in order.
	Scopes []string
	// Expiry is the token's exp.
	Expiry time.Time
	// JTI is the token's jti ("" without one).
	JTI    string
	Issuer string
	// KeyID stands where an API key's id does ({civic.key_id}, rate limit
	// buckets, logs): "jwt:sub:" + Subject when the subject is 1 to 64 of
	// A-Z a-z 0-9 . _ ~ @ | + = -, else "jwt:hash:" + 32 hex digits of
	// SHA-256(Issuer, NUL, Subject). API key ids are key_…: never equal.
	KeyID string
	// DeniedFamilies are the RequireScopes families whose scope the token
	// lacks, in configuration order; nil when none is.
	DeniedFamilies []string

	// key verified the signature (Verifier.Valid asks whether it is still
	// published).
	key *jwk
}

// Denies reports whether the token lacks the scope family requires.
func (id *Identity) Denies(family string) bool {
	return slices.Contains(id.DeniedFamilies, family)
}

// keyID derives Identity.KeyID.
func keyID(issuer, subject string) string {
	if safeSubject(subject) {
		return "jwt:sub:" + subject
	}
	h := sha256.Sum256([]byte(issuer + "\x00" + subject))
	return "jwt:hash:" + hex.EncodeToString(h[:16])
}

// safeSubject reports whether a subject may stand in a key id as written:
// short, and nothing a log line, a Redis key or a header would need to
// escape. Auth0 (auth0|…, …@clients), Okta, Keycloak (UUIDs) and Entra ID
// (base64url) subjects all are.
func safeSubject(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '_' || c == '~' || c == '@' || c == '|' || c == '+' || c == '=' || c == '-':
		default:
			return false
		}
	}
	return true
}

// admit runs the checks of the claims that answer 401, cheapest and
// clearest first, before any key is looked up or signature verified: a
// token refused here costs no key set refresh and no public-key operation.
// Only the signature, checked after, can make a token acceptable; the tier
// (a 403, which says the token itself was good) is resolved after it.
func (v *Verifier) admit(c *claims, now time.Time) (Identity, *Error) {
	cfg := &v.cfg
	switch {
	case c.iss != cfg.Issuer:
		return Identity{}, refusal(WrongIssuer)
	case c.idToken:
		return Identity{}, refusal(NotAnAccessToken)
	case c.exp == nil:
		return Identity{}, refusal(MissingClaim)
	case !now.Before(c.exp.Add(cfg.Leeway)):
		return Identity{}, refusal(Expired)
	case c.nbf != nil && now.Before(c.nbf.Add(-cfg.Leeway)),
		c.iat != nil && now.Before(c.iat.Add(-cfg.Leeway)):
		return Identity{}, refusal(NotYetValid)
	case !slices.Contains(c.aud, cfg.Audience):
		return Identity{}, refusal(WrongAudience)
	case c.subject == "":
		return Identity{}, refusal(MissingClaim)
	case !deniable(c.subject, c.jti):
		return Identity{}, refusal(Malformed)
	}
	org := cfg.Issuer + "|" + c.subject
	if cfg.OrgClaim != "" {
		if c.org == "" {
			return Identity{}, refusal(MissingClaim)
		}
		org = c.org
	}
	id := Identity{
		Subject: c.subject, Organization: org, Scopes: c.scopes,
		Expiry: c.exp.Time, JTI: c.jti, Issuer: c.iss, KeyID: keyID(c.iss, c.subject),
	}
	for _, fs := range cfg.RequireScopes {
		if !slices.Contains(c.scopes, fs.Scope) {
			id.DeniedFamilies = append(id.DeniedFamilies, fs.Family)
		}
	}
	return id, nil
}

// tierOf resolves a verified token's tier: the tier claim, or the first
// ScopeTiers entry whose scope the token holds; without either, DefaultTier.
func (v *Verifier) tierOf(c *claims) (string, *Error) {
	cfg := &v.cfg
	switch {
	case cfg.TierClaim != "" && c.tierPresent:
		if !c.tierStr || !slices.Contains(cfg.Tiers, c.tier) {
			return "", refusal(UnknownTier)
		}
		return c.tier, nil
	case len(cfg.ScopeTiers) > 0:
		for _, st := range cfg.ScopeTiers {
			if slices.Contains(c.scopes, st.Scope) {
				return st.Tier, nil
			}
		}
	}
	if cfg.DefaultTier == "" {
		return "", refusal(MissingTier)
	}
	return cfg.DefaultTier, nil
}

// deniable reports whether the deny list can hold a token's subject and its
// jti (when it has one): a token it could not deny is not admitted
// (docs/design.md D64, docs/identity.md "How a token is checked").
func deniable(subject, jti string) bool {
	return denyable.ValueProblem(subject) == "" && (jti == "" || denyable.ValueProblem(jti) == "")
}
