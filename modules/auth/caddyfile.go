package auth

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
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
//	    failed_lookups <N/s|N/m|N/h>|off
//	    failed_lookup_clients <n>
//	    tier <name> <rate> [<family>...]
//	}
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // option name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch opt := d.Val(); opt {
		case "keys":
			var src, where string
			if !d.Args(&src, &where) || d.NextArg() {
				return d.ArgErr()
			}
			a.Keys.Source = src
			switch src {
			case "postgres":
				a.Keys.DSN = where
			case "file":
				a.Keys.File = where
			default:
				return d.Errf("keys source %q must be postgres or file", src)
			}
		case "environment", "identity_secret":
			var v string
			if err := caddyopt.OneArg(d, &v); err != nil {
				return err
			}
			if opt == "environment" {
				a.Environment = v
			} else {
				a.IdentitySecret = v
			}
		case "identity_ttl", "cache_ttl", "negative_cache_ttl", "lookup_timeout":
			var dur caddy.Duration
			if err := caddyopt.Duration(d, &dur); err != nil {
				return err
			}
			switch opt {
			case "identity_ttl":
				a.IdentityTTL = dur
			case "cache_ttl":
				a.CacheTTL = dur
			case "negative_cache_ttl":
				a.NegativeCacheTTL = dur
			default:
				a.LookupTimeout = dur
			}
		case "cache_size", "negative_cache_size", "failed_lookup_clients":
			var n int
			if err := caddyopt.PositiveInt(d, &n); err != nil {
				return err
			}
			switch opt {
			case "cache_size":
				a.CacheSize = n
			case "negative_cache_size":
				a.NegativeCacheSize = n
			default:
				a.FailedLookupClients = n
			}
		case "failed_lookups":
			var v string
			if err := caddyopt.OneArg(d, &v); err != nil {
				return err
			}
			if v != "off" {
				if _, _, err := parseRate(v); err != nil {
					return d.Errf("failed_lookups: %v; want N/s, N/m, N/h or off", err)
				}
			}
			a.FailedLookups = v
		case "tier":
			args := d.RemainingArgs()
			if len(args) < 2 {
				return d.ArgErr()
			}
			if !rateRE.MatchString(args[1]) {
				return d.Errf("tier %s: rate %q is not like 100/m", args[0], args[1])
			}
			if a.Tiers == nil {
				a.Tiers = make(map[string]TierConfig)
			}
			if _, dup := a.Tiers[args[0]]; dup {
				return d.Errf("tier %s defined twice", args[0])
			}
			a.Tiers[args[0]] = TierConfig{Rate: args[1], Families: args[2:]}
		default:
			return d.Errf("unknown civic_auth option %q", opt)
		}
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from the directive:
//
//	civic_auth [<matcher>] {
//	    require_family <family>
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "require_family":
			if !d.Args(&h.RequireFamily) || d.NextArg() {
				return d.ArgErr()
			}
		default:
			return d.Errf("unknown civic_auth option %q", d.Val())
		}
	}
	return nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*App)(nil)
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)
