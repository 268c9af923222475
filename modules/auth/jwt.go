package auth

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/auth/accesstoken"
)

// JWTConfig is civic_auth's jwt block: access tokens from the team's
// identity provider, admitted beside API keys (docs/identity.md). Each field
// is the accesstoken.Config option of the same name.
type JWTConfig struct {
	Issuer     string   `json:"issuer"`
	Audience   string   `json:"audience"`
	JWKSURL    string   `json:"jwks_url,omitempty"`
	Algorithms []string `json:"algorithms,omitempty"`
	// Leeway: 0 is the default (30 s), negative none (the Caddyfile's
	// `leeway 0`).
	Leeway        caddy.Duration `json:"leeway,omitempty"`
	TierClaim     string         `json:"tier_claim,omitempty"`
	ScopeTiers    [][2]string    `json:"scope_tiers,omitempty"` // [scope, tier], first match wins
	DefaultTier   string         `json:"default_tier,omitempty"`
	OrgClaim      string         `json:"org_claim,omitempty"`
	SubjectClaim  string         `json:"subject_claim,omitempty"`
	RequireScopes [][2]string    `json:"require_scopes,omitempty"` // [family, scope]
	MaxTokenSize  int64          `json:"max_token_size,omitempty"`
	JWKSCacheMin  caddy.Duration `json:"jwks_cache_min,omitempty"`
	JWKSCacheMax  caddy.Duration `json:"jwks_cache_max,omitempty"`
	CacheSize     int            `json:"cache_size,omitempty"`
	MaxConcurrent int            `json:"max_concurrent,omitempty"`
	// FetchTimeout bounds one request of discovery or the key set (0: the
	// default, 10 s).
	FetchTimeout caddy.Duration `json:"fetch_timeout,omitempty"`
	// ResourceMetadata is the URL of this API's OAuth 2.0 Protected
	// Resource Metadata (RFC 9728), named in every 401's challenge; default:
	// the audience's origin + /.well-known/oauth-protected-resource + the
	// audience's path, when the audience is an http(s) URL.
	ResourceMetadata string `json:"resource_metadata,omitempty"`
}

// caddyfileBlock is the jwt block's options.
func (c *JWTConfig) caddyfileBlock() caddyopt.Block {
	pairs := func(dst *[][2]string) caddyopt.Option {
		return caddyopt.Each(func(o *caddyopt.Args) error {
			a, b, err := o.Two()
			if err != nil {
				return err
			}
			*dst = append(*dst, [2]string{a, b})
			return nil
		})
	}
	return caddyopt.Block{
		"issuer":     caddyopt.String(&c.Issuer),
		"audience":   caddyopt.String(&c.Audience),
		"jwks_url":   caddyopt.String(&c.JWKSURL),
		"algorithms": caddyopt.Strings(&c.Algorithms),
		"leeway": caddyopt.Func(func(o *caddyopt.Args) error {
			v, err := o.One()
			if err != nil {
				return err
			}
			d, err := caddy.ParseDuration(v)
			if err != nil || d < 0 || d > accesstoken.MaxLeeway {
				return o.Errf("%q: want a duration from 0 to %s", v, accesstoken.MaxLeeway)
			}
			if d == 0 {
				d = -1 // none (0 in the JSON is the default)
			}
			c.Leeway = caddy.Duration(d)
			return nil
		}),
		"tier_claim":        caddyopt.String(&c.TierClaim),
		"scope_tier":        pairs(&c.ScopeTiers),
		"default_tier":      caddyopt.String(&c.DefaultTier),
		"org_claim":         caddyopt.String(&c.OrgClaim),
		"subject_claim":     caddyopt.String(&c.SubjectClaim),
		"require_scope":     pairs(&c.RequireScopes),
		"max_token_size":    caddyopt.Size(&c.MaxTokenSize, accesstoken.MinMaxTokenSize, accesstoken.MaxMaxTokenSize),
		"jwks_cache_min":    caddyopt.PositiveDuration(&c.JWKSCacheMin),
		"jwks_cache_max":    caddyopt.PositiveDuration(&c.JWKSCacheMax),
		"cache_size":        caddyopt.Positive(&c.CacheSize),
		"max_concurrent":    caddyopt.Positive(&c.MaxConcurrent),
		"fetch_timeout":     caddyopt.PositiveDuration(&c.FetchTimeout),
		"resource_metadata": caddyopt.String(&c.ResourceMetadata),
	}
}

// verifierConfig is c as accesstoken takes it; tiers are the app's.
func (c *JWTConfig) verifierConfig(repl *caddy.Replacer, tiers []string, logger *slog.Logger) accesstoken.Config {
	cfg := accesstoken.Config{
		Issuer: repl.ReplaceAll(c.Issuer, ""), Audience: repl.ReplaceAll(c.Audience, ""),
		JWKSURL: repl.ReplaceAll(c.JWKSURL, ""), Algorithms: c.Algorithms, Leeway: time.Duration(c.Leeway),
		TierClaim: c.TierClaim, DefaultTier: c.DefaultTier, Tiers: tiers,
		OrgClaim: c.OrgClaim, SubjectClaim: c.SubjectClaim,
		MaxTokenSize: int(c.MaxTokenSize), JWKSCacheMin: time.Duration(c.JWKSCacheMin), JWKSCacheMax: time.Duration(c.JWKSCacheMax),
		CacheSize: c.CacheSize, MaxConcurrent: c.MaxConcurrent, FetchTimeout: time.Duration(c.FetchTimeout),
		Logger: logger,
	}
	// a key set cached for less than the default refresh interval may be
	// refreshed as often as it expires
	if cfg.JWKSCacheMin > 0 && cfg.JWKSCacheMin < accesstoken.DefaultJWKSRefreshMinInterval {
		cfg.JWKSRefreshMinInterval = cfg.JWKSCacheMin
	}
	for _, p := range c.ScopeTiers {
		cfg.ScopeTiers = append(cfg.ScopeTiers, accesstoken.ScopeTier{Scope: p[0], Tier: p[1]})
	}
	for _, p := range c.RequireScopes {
		cfg.RequireScopes = append(cfg.RequireScopes, accesstoken.FamilyScope{Family: p[0], Scope: p[1]})
	}
	return cfg
}

// resourceMetadataURL is where this API's RFC 9728 metadata is served: the
// configured URL, or the one derived from an http(s) audience ("" when the
// audience is not a URL and none is configured: 401s then name none).
func resourceMetadataURL(configured, audience string) string {
	if configured != "" {
		return configured
	}
	u, err := url.Parse(audience)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	path := u.EscapedPath()
	if path == "/" {
		path = ""
	}
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
}

// provisionTokens builds the verifier: the key set is fetched now, so a
// first fetch that fails is a provision error naming the URL.
func (a *App) provisionTokens(ctx caddy.Context, repl *caddy.Replacer) error {
	if a.JWT == nil {
		return nil
	}
	tiers := make([]string, 0, len(a.tiers))
	for name := range a.tiers {
		tiers = append(tiers, name)
	}
	slices.Sort(tiers)
	cfg := a.JWT.verifierConfig(repl, tiers, ctx.Slogger().With("component", "jwt"))
	for _, rs := range cfg.RequireScopes {
		if !familyRE.MatchString(rs.Family) {
			return fmt.Errorf("civic_auth: jwt require_scope: bad family %q", rs.Family)
		}
	}
	v, err := accesstoken.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("civic_auth: %w", err) // accesstoken's errors name the jwt option
	}
	if err := registerJWTMetrics(ctx.GetMetricsRegistry(), v); err != nil {
		v.Close()
		return fmt.Errorf("civic_auth: jwt metrics: %w", err)
	}
	a.tokens = newTokenAuth(v, a, resourceMetadataURL(repl.ReplaceAll(a.JWT.ResourceMetadata, ""), cfg.Audience))
	return nil
}
