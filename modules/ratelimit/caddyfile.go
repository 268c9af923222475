package ratelimit

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("civic_rate_limit", caddyopt.Handler[Handler]())
	httpcaddyfile.RegisterDirectiveOrder("civic_rate_limit", httpcaddyfile.After, "forward_auth")
	httpcaddyfile.RegisterGlobalOption("civic_rate_limit", caddyopt.App[App]("civic_rate_limit"))
}

// UnmarshalCaddyfile parses
//
//	civic_rate_limit {
//	    key    <placeholder or literal>
//	    rate   <quota/window or placeholder>
//	    policy <name or placeholder>
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		var dst *string
		switch d.Val() {
		case "key":
			dst = &h.Key
		case "rate":
			dst = &h.Rate
		case "policy":
			dst = &h.Policy
		default:
			return d.Errf("unknown civic_rate_limit option %q", d.Val())
		}
		if *dst != "" {
			return d.Errf("duplicate %s", d.Val())
		}
		if !d.NextArg() {
			return d.ArgErr()
		}
		*dst = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	return nil
}

// UnmarshalCaddyfile parses the global option block:
//
//	civic_rate_limit {
//	    redis            <url>              # or: addrs <addr...> [master_name <name>]
//	    username         <name>
//	    password         <secret>           # {env.X}
//	    key_prefix       <prefix>
//	    timeout          <duration>         # ≤ 50ms
//	    on_store_error   local|open|closed
//	    lease            <share>            # 0 … 0.05
//	    breaker_failures <n>
//	    breaker_cooldown <duration>
//	    max_keys         <n>
//	}
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // option name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		opt := d.Val()
		if opt == "addrs" {
			a.Addrs = d.RemainingArgs()
			if len(a.Addrs) == 0 {
				return d.ArgErr()
			}
			continue
		}
		if !d.NextArg() {
			return d.ArgErr()
		}
		val := d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
		switch opt {
		case "redis":
			a.Redis = val
		case "master_name":
			a.MasterName = val
		case "username":
			a.Username = val
		case "password":
			a.Password = val
		case "key_prefix":
			a.KeyPrefix = val
		case "on_store_error":
			a.OnStoreError = val
		case "timeout", "breaker_cooldown":
			dur, err := caddy.ParseDuration(val)
			if err != nil {
				return d.Errf("%s: %v", opt, err)
			}
			if opt == "timeout" {
				a.Timeout = caddy.Duration(dur)
			} else {
				a.BreakerCooldown = caddy.Duration(dur)
			}
		case "lease":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return d.Errf("lease: %v", err)
			}
			a.Lease = &f
		case "breaker_failures", "max_keys":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return d.Errf("%s: want a positive integer", opt)
			}
			if opt == "max_keys" {
				a.MaxKeys = n
			} else {
				a.BreakerFailures = n
			}
		default:
			return d.Errf("unknown civic_rate_limit global option %q", opt)
		}
	}
	return nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Handler)(nil)
	_ caddyfile.Unmarshaler = (*App)(nil)
)
