package auth

import (
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("civic_auth", caddyopt.App[App]("civic_auth"))
	httpcaddyfile.RegisterHandlerDirective("civic_auth", caddyopt.Handler[Handler]())
	httpcaddyfile.RegisterDirectiveOrder("civic_auth", httpcaddyfile.After, "basic_auth")
}

// UnmarshalCaddyfile sets up the app from the global option block:
//
//	civic_auth {
//	    keys postgres <dsn> | keys file <path>
//	    environment live|test
//	    identity_secret <secret>
//	    identity_ttl <duration>
//	    cache_ttl <duration>
//	    negative_cache_ttl <duration>
//	    cache_size <n>
//	    negative_cache_size <n>
//	    lookup_timeout <duration>
//	    watch_interval <duration>            # recheck of open WebSocket/SSE credentials (default 1s)
//	    failed_lookups <rate>|off            # rate: contract.ParseRate (N/s, N/m, N/h, N/d, N/<duration>)
//	    failed_lookup_clients <n>
//	    tier <name> <rate>... [cost <rate>] [<family>...]   # repeated: one line per tier (import tiers.caddy)
//	    jwt {                                # access tokens from an IdP beside API keys (docs/identity.md)
//	        issuer <url>
//	        audience <uri>
//	        ...
//	    }
//	}
//
// Every option but tier may be given once; each tier name once. A tier line
// holds one to contract.MaxRatesPerTier rates (the tokens with '/', each
// window once), then optionally `cost` and one rate (the cost budget in
// GraphQL cost points per window), then the families (tiers.go).
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	jwt := new(JWTConfig)
	return caddyopt.Read(d, "civic_auth", caddyopt.Block{
		"jwt": caddyopt.Func(func(o *caddyopt.Args) error {
			a.JWT = jwt
			return caddyopt.ReadSub(o, jwt.caddyfileBlock())
		}),
		"keys":                  caddyopt.Func(a.unmarshalKeys),
		"environment":           caddyopt.OneOf(&a.Environment, "live", "test"),
		"identity_secret":       caddyopt.String(&a.IdentitySecret),
		"identity_ttl":          caddyopt.PositiveDuration(&a.IdentityTTL),
		"cache_ttl":             caddyopt.PositiveDuration(&a.CacheTTL),
		"negative_cache_ttl":    caddyopt.PositiveDuration(&a.NegativeCacheTTL),
		"lookup_timeout":        caddyopt.PositiveDuration(&a.LookupTimeout),
		"watch_interval":        caddyopt.PositiveDuration(&a.WatchInterval),
		"cache_size":            caddyopt.Positive(&a.CacheSize),
		"negative_cache_size":   caddyopt.Positive(&a.NegativeCacheSize),
		"failed_lookup_clients": caddyopt.Positive(&a.FailedLookupClients),
		"failed_lookups": caddyopt.Func(func(o *caddyopt.Args) error {
			v, err := o.One()
			if err != nil {
				return err
			}
			if v != "off" {
				if _, err := contract.ParseRate(v); err != nil {
					return d.WrapErr(fmt.Errorf("failed_lookups: %w (or off)", err))
				}
			}
			a.FailedLookups = v
			return nil
		}),
		"tier": caddyopt.EachNamed(1, func(o *caddyopt.Args) error {
			name := o.Name()
			tc, err := parseTierLine(o.Rest())
			if err != nil {
				return d.WrapErr(fmt.Errorf("tier %s: %w", name, err))
			}
			if a.Tiers == nil {
				a.Tiers = make(map[string]TierConfig)
			}
			a.Tiers[name] = tc
			return nil
		}),
	})
}

// unmarshalKeys reads `keys postgres <dsn>` or `keys file <path>`.
func (a *App) unmarshalKeys(o *caddyopt.Args) error {
	src, where, err := o.Two()
	if err != nil {
		return err
	}
	switch src {
	case "postgres":
		a.Keys.DSN = where
	case "file":
		a.Keys.File = where
	default:
		return o.Errf("want postgres <dsn> or file <path>, got %q", src)
	}
	a.Keys.Source = src
	return nil
}

// UnmarshalCaddyfile sets up the handler from the directive:
//
//	civic_auth [<matcher>] {
//	    require_family <family>
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_auth", caddyopt.Block{
		"require_family": caddyopt.String(&h.RequireFamily),
	})
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*App)(nil)
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)
