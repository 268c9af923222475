package accesstoken

import (
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{
		Issuer: "https://idp.example/", Audience: "https://api.example",
		TierClaim: "tier", Tiers: []string{"free", "paid_beta"},
	}
}

func TestValidateAcceptsShippedShapes(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"tier claim":          func(*Config) {},
		"scope tiers":         func(c *Config) { c.TierClaim, c.ScopeTiers = "", []ScopeTier{{"civic:paid", "paid_beta"}} },
		"default tier only":   func(c *Config) { c.TierClaim, c.DefaultTier = "", "free" },
		"loopback http":       func(c *Config) { c.Issuer = "http://127.0.0.1:4444/" },
		"every algorithm":     func(c *Config) { c.Algorithms = asymmetric },
		"require scopes":      func(c *Config) { c.RequireScopes = []FamilyScope{{"bills", "records:read"}} },
		"bounds at the edges": func(c *Config) { c.MaxTokenSize, c.Leeway = MaxMaxTokenSize, MaxLeeway },
	} {
		c := validConfig()
		edit(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateNamesTheOption(t *testing.T) {
	cases := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Issuer = "" }, "jwt: issuer: required"},
		{func(c *Config) { c.Issuer = "http://idp.example/" }, "jwt: issuer: \"http://idp.example/\": plain http only to a loopback host"},
		{func(c *Config) { c.Issuer = "https://u:p@idp.example/" }, "jwt: issuer: must not hold credentials"},
		{func(c *Config) { c.Audience = "" }, "jwt: audience: required"},
		{func(c *Config) { c.JWKSURL = "http://keys.example/" }, "jwt: jwks_url:"},
		{func(c *Config) { c.Algorithms = []string{"RS256", "HS256"} }, `jwt: algorithms: "HS256" is symmetric`},
		{func(c *Config) { c.Algorithms = []string{"none"} }, `jwt: algorithms: "none": unsigned tokens are never accepted`},
		{func(c *Config) { c.Algorithms = []string{"rs256"} }, `jwt: algorithms: "rs256" is not one of RS256`},
		{func(c *Config) { c.Leeway = time.Hour }, "jwt: leeway: want 0 to 5m0s"},
		{func(c *Config) { c.Tiers = nil }, "jwt: tiers:"},
		{func(c *Config) { c.ScopeTiers = []ScopeTier{{"s", "free"}} }, "jwt: tier_claim: give tier_claim or scope_tier lines, not both"},
		{func(c *Config) { c.TierClaim = "" }, "jwt: default_tier: required without tier_claim or scope_tier"},
		{func(c *Config) { c.DefaultTier = "gold" }, `jwt: default_tier: unknown tier "gold"`},
		{func(c *Config) { c.TierClaim, c.ScopeTiers = "", []ScopeTier{{"s", "gold"}} }, `jwt: scope_tier: scope "s": unknown tier "gold"`},
		{func(c *Config) { c.TierClaim, c.ScopeTiers = "", []ScopeTier{{"a b", "free"}} }, `jwt: scope_tier: "a b" is not a scope`},
		{func(c *Config) { c.TierClaim, c.ScopeTiers = "", []ScopeTier{{"s", "free"}, {"s", "paid_beta"}} }, `jwt: scope_tier: scope "s" given twice`},
		{func(c *Config) { c.TierClaim = strings.Repeat("x", 300) }, "jwt: tier_claim: claim name longer than"},
		{func(c *Config) { c.RequireScopes = []FamilyScope{{"bills", `a"b`}} }, `jwt: require_scope: family "bills": "a\"b" is not a scope`},
		{func(c *Config) { c.RequireScopes = []FamilyScope{{"bills", "x"}, {"bills", "y"}} }, `jwt: require_scope: family "bills" given twice`},
		{func(c *Config) { c.MaxTokenSize = 100 }, "jwt: max_token_size: want 1024 to 65536 bytes, got 100"},
		{func(c *Config) { c.JWKSCacheMin, c.JWKSCacheMax = time.Hour, time.Minute }, "jwt: jwks_cache_min: want 0 < jwks_cache_min (1h0m0s) ≤ jwks_cache_max (1m0s)"},
		{func(c *Config) { c.JWKSRefreshMinInterval = time.Hour }, "jwt: jwks_refresh_min_interval:"},
		{func(c *Config) { c.CacheSize = -1 }, "jwt: cache_size: negative"},
	}
	for _, tc := range cases {
		c := validConfig()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestNewRefusesAnInvalidConfig(t *testing.T) {
	c := validConfig()
	c.Algorithms = []string{"HS256"}
	if _, err := New(t.Context(), c); err == nil || !strings.Contains(err.Error(), "algorithms") {
		t.Fatalf("New: %v", err)
	}
}
