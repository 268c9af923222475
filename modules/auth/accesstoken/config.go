package accesstoken

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Config is the jwt block of civic_auth, option for option (docs/identity.md
// "Options"). Validate's errors name the Caddyfile option.
type Config struct {
	// Issuer is the iss every token must carry, exactly (a trailing slash
	// matters: Auth0's issuer has one). https, or http on a loopback host.
	Issuer string
	// Audience must be one of the token's aud values.
	Audience string
	// JWKSURL, when set, is where the keys are: no discovery. Otherwise the
	// jwks_uri of the issuer's discovery document, which must be on the
	// issuer's scheme, host and port.
	JWKSURL string
	// Algorithms the tokens may be signed with; default RS256. Asymmetric
	// only: RS256/384/512, PS256/384/512, ES256/384/512, EdDSA.
	Algorithms []string
	// Leeway for exp, nbf and iat against the clock: 0 takes the default
	// (30 s), a negative value means none; at most 5 min.
	Leeway time.Duration

	// TierClaim is a string claim holding the tier's name; or ScopeTiers
	// maps scopes to tiers (the first whose scope the token holds wins). At
	// most one of them; with neither, DefaultTier is every token's tier.
	TierClaim  string
	ScopeTiers []ScopeTier
	// DefaultTier is the tier of a token with no tier claim or no matching
	// scope; empty: such a token is refused (MissingTier).
	DefaultTier string
	// Tiers are the tier names the gateway defines (the app's tier lines);
	// every tier above must be one, and a tier claim naming another is
	// UnknownTier.
	Tiers []string

	// OrgClaim is a string claim holding the organization; empty: the
	// organization is Issuer + "|" + subject (each subject its own).
	OrgClaim string
	// SubjectClaim names the subject; default "sub".
	SubjectClaim string
	// RequireScopes: a request touching Family needs the token to hold
	// Scope (Identity.DeniedFamilies, Verifier.RequireFamily).
	RequireScopes []FamilyScope

	// MaxTokenSize bounds the token before anything is parsed; default
	// 8 KiB, from 1 KiB to 64 KiB.
	MaxTokenSize int
	// JWKSCacheMin and JWKSCacheMax clamp the key set's Cache-Control
	// max-age; defaults 5 min and 24 h.
	JWKSCacheMin time.Duration
	JWKSCacheMax time.Duration
	// JWKSRefreshMinInterval: at most one fetch of the key set per interval
	// (an unknown kid, a due refresh, a retry after a failure); default 10 s.
	JWKSRefreshMinInterval time.Duration
	// FetchTimeout bounds one HTTP request of discovery or the key set;
	// default 10 s.
	FetchTimeout time.Duration
	// CacheSize bounds the verified tokens kept (SHA-256 of the token →
	// identity, until exp); default 10 000.
	CacheSize int
	// MaxConcurrent bounds signature verifications running at once; more
	// wait with their request's context. Default GOMAXPROCS.
	MaxConcurrent int

	// Transport carries discovery and key set requests; nil:
	// http.DefaultTransport. Redirects are never followed.
	Transport http.RoundTripper
	// Logger receives key set events (never a token or key material); nil:
	// discarded.
	Logger *slog.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// ScopeTier maps a scope to a tier (Caddyfile: scope_tier <scope> <tier>).
type ScopeTier struct{ Scope, Tier string }

// FamilyScope makes a family need a scope (require_scope <family> <scope>).
type FamilyScope struct{ Family, Scope string }

// Defaults and bounds of the options.
const (
	DefaultMaxTokenSize           = 8 << 10
	MinMaxTokenSize               = 1 << 10
	MaxMaxTokenSize               = 64 << 10
	DefaultLeeway                 = 30 * time.Second
	MaxLeeway                     = 5 * time.Minute
	DefaultJWKSCacheMin           = 5 * time.Minute
	DefaultJWKSCacheMax           = 24 * time.Hour
	DefaultJWKSRefreshMinInterval = 10 * time.Second
	DefaultFetchTimeout           = 10 * time.Second
	DefaultCacheSize              = 10000
	maxClaimNameLen               = 256
)

// asymmetric lists the algorithms Config.Algorithms may name.
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// withDefaults returns c with every unset option at its default.
func (c Config) withDefaults() Config {
	if len(c.Algorithms) == 0 {
		c.Algorithms = []string{"RS256"}
	}
	switch {
	case c.Leeway == 0:
		c.Leeway = DefaultLeeway
	case c.Leeway < 0:
		c.Leeway = 0
	}
	if c.SubjectClaim == "" {
		c.SubjectClaim = "sub"
	}
	if c.MaxTokenSize == 0 {
		c.MaxTokenSize = DefaultMaxTokenSize
	}
	if c.JWKSCacheMin == 0 {
		c.JWKSCacheMin = DefaultJWKSCacheMin
	}
	if c.JWKSCacheMax == 0 {
		c.JWKSCacheMax = DefaultJWKSCacheMax
	}
	if c.JWKSRefreshMinInterval == 0 {
		c.JWKSRefreshMinInterval = DefaultJWKSRefreshMinInterval
	}
	if c.FetchTimeout == 0 {
		c.FetchTimeout = DefaultFetchTimeout
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = runtime.GOMAXPROCS(0)
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks the options with their defaults applied; each error names
// the option as the Caddyfile spells it ("jwt: issuer: …").
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(option, format string, args ...any) {
		errs = append(errs, fmt.Errorf("jwt: %s: %s", option, fmt.Sprintf(format, args...)))
	}
	if c.Issuer == "" {
		bad("issuer", "required")
	} else if err := checkFetchURL(c.Issuer); err != nil {
		bad("issuer", "%v", err)
	}
	if c.Audience == "" {
		bad("audience", "required")
	}
	if c.JWKSURL != "" {
		if err := checkFetchURL(c.JWKSURL); err != nil {
			bad("jwks_url", "%v", err)
		}
	}
	for _, a := range c.Algorithms {
		switch {
		case slices.Contains(asymmetric, a):
		case strings.EqualFold(a, "none"):
			bad("algorithms", "%q: unsigned tokens are never accepted", a)
		case strings.HasPrefix(strings.ToUpper(a), "HS"):
			bad("algorithms", "%q is symmetric: its key would be a shared secret; only %s are accepted", a, strings.Join(asymmetric, ", "))
		default:
			bad("algorithms", "%q is not one of %s", a, strings.Join(asymmetric, ", "))
		}
	}
	if c.Leeway > MaxLeeway {
		bad("leeway", "want 0 to %s, got %s", MaxLeeway, c.Leeway)
	}
	c.validateTiers(bad)
	for _, claim := range [...]struct{ option, name string }{
		{"tier_claim", c.TierClaim}, {"org_claim", c.OrgClaim}, {"subject_claim", c.SubjectClaim},
	} {
		if len(claim.name) > maxClaimNameLen {
			bad(claim.option, "claim name longer than %d bytes", maxClaimNameLen)
		}
	}
	seen := map[string]bool{}
	for _, fs := range c.RequireScopes {
		switch {
		case fs.Family == "":
			bad("require_scope", "empty family")
		case seen[fs.Family]:
			bad("require_scope", "family %q given twice", fs.Family)
		case !validScope(fs.Scope):
			bad("require_scope", "family %q: %q is not a scope (RFC 6749 scope-token)", fs.Family, fs.Scope)
		}
		seen[fs.Family] = true
	}
	if c.MaxTokenSize < MinMaxTokenSize || c.MaxTokenSize > MaxMaxTokenSize {
		bad("max_token_size", "want %d to %d bytes, got %d", MinMaxTokenSize, MaxMaxTokenSize, c.MaxTokenSize)
	}
	if c.JWKSCacheMin <= 0 || c.JWKSCacheMax < c.JWKSCacheMin {
		bad("jwks_cache_min", "want 0 < jwks_cache_min (%s) ≤ jwks_cache_max (%s)", c.JWKSCacheMin, c.JWKSCacheMax)
	}
	if c.JWKSRefreshMinInterval < 0 || c.JWKSRefreshMinInterval > c.JWKSCacheMin {
		bad("jwks_refresh_min_interval", "want 0 to jwks_cache_min (%s), got %s", c.JWKSCacheMin, c.JWKSRefreshMinInterval)
	}
	if c.FetchTimeout < 0 {
		bad("jwks_fetch_timeout", "negative")
	}
	if c.CacheSize < 0 {
		bad("cache_size", "negative")
	}
	if c.MaxConcurrent < 0 {
		bad("max_concurrent_verifications", "negative")
	}
	return errors.Join(errs...)
}

func (c Config) validateTiers(bad func(option, format string, args ...any)) {
	if len(c.Tiers) == 0 {
		bad("tiers", "the gateway's tier names are required")
	}
	if c.TierClaim != "" && len(c.ScopeTiers) > 0 {
		bad("tier_claim", "give tier_claim or scope_tier lines, not both")
	}
	if c.TierClaim == "" && len(c.ScopeTiers) == 0 && c.DefaultTier == "" {
		bad("default_tier", "required without tier_claim or scope_tier: every token needs a tier")
	}
	if c.DefaultTier != "" && !slices.Contains(c.Tiers, c.DefaultTier) {
		bad("default_tier", "unknown tier %q (tiers: %s)", c.DefaultTier, strings.Join(c.Tiers, ", "))
	}
	seen := map[string]bool{}
	for _, st := range c.ScopeTiers {
		switch {
		case !validScope(st.Scope):
			bad("scope_tier", "%q is not a scope (RFC 6749 scope-token)", st.Scope)
		case seen[st.Scope]:
			bad("scope_tier", "scope %q given twice", st.Scope)
		case !slices.Contains(c.Tiers, st.Tier):
			bad("scope_tier", "scope %q: unknown tier %q (tiers: %s)", st.Scope, st.Tier, strings.Join(c.Tiers, ", "))
		}
		seen[st.Scope] = true
	}
}

// validScope reports whether s is an RFC 6749 scope-token: one or more of
// %x21 / %x23-5B / %x5D-7E (printable ASCII but space, " and \), so it can
// also stand in a WWW-Authenticate quoted-string.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
