package ratelimit

import (
	"time"

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
//
// Each option may be given once; a literal rate is checked here, one with a
// placeholder per request.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_rate_limit", caddyopt.Block{
		"key": caddyopt.String(&h.Key),
		"rate": caddyopt.Rate(&h.Rate, func(v string) error {
			_, err := parseRate(v)
			return err
		}),
		"policy": caddyopt.String(&h.Policy),
	})
}

// UnmarshalCaddyfile parses the global option block:
//
//	civic_rate_limit {
//	    redis            <url>              # or: addrs <addr...> [master_name <name>]
//	    username         <name>
//	    password         <secret>           # {env.X}
//	    key_prefix       <prefix>
//	    timeout          <duration>         # 0 … 50ms (0: the default, 50ms)
//	    on_store_error   local|open|closed
//	    lease            <share>            # 0 … 0.05
//	    breaker_failures <n>
//	    breaker_cooldown <duration>         # 0: the default, 1s
//	    max_keys         <n>
//	}
//
// Each option may be given once.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_rate_limit", caddyopt.Block{
		"redis":            caddyopt.String(&a.Redis),
		"addrs":            caddyopt.Strings(&a.Addrs),
		"master_name":      caddyopt.String(&a.MasterName),
		"username":         caddyopt.String(&a.Username),
		"password":         caddyopt.String(&a.Password),
		"key_prefix":       caddyopt.String(&a.KeyPrefix),
		"timeout":          caddyopt.DurationIn(&a.Timeout, 0, 50*time.Millisecond),
		"on_store_error":   caddyopt.OneOf(&a.OnStoreError, modeLocal, modeOpen, modeClosed),
		"lease":            caddyopt.Float(&a.Lease, 0, 0.05),
		"breaker_failures": caddyopt.Positive(&a.BreakerFailures),
		"breaker_cooldown": caddyopt.DurationIn(&a.BreakerCooldown, 0, caddyopt.Forever),
		"max_keys":         caddyopt.Positive(&a.MaxKeys),
	})
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Handler)(nil)
	_ caddyfile.Unmarshaler = (*App)(nil)
)
