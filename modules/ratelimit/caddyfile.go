package ratelimit

import (
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/modules/contract"
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
//	    rate   <quota/window>... | <placeholder>   # up to four rates: 100/m 20000/d
//	    policy <name or placeholder>
//	    cost   <points/window or placeholder>     # cost budget, e.g. {civic.cost_budget}
//	    count  per_key|per_organization [<tier>...] # what quotas count (default per_key); tiers: only these
//	}
//
// Each option may be given once; literal rates are checked here, ones with a
// placeholder per request.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_rate_limit", caddyopt.Block{
		"key":    caddyopt.String(&h.Key),
		"rate":   rateList(&h.Rate),
		"policy": caddyopt.String(&h.Policy),
		"cost": caddyopt.Rate(&h.Cost, func(v string) error {
			_, err := contract.ParseRate(v)
			return err
		}),
		"count": countOption(h),
	})
}

// countOption reads `count per_key|per_organization [<tier>...]`.
func countOption(h *Handler) caddyopt.Option {
	return caddyopt.Func(func(a *caddyopt.Args) error {
		args, err := a.AtLeast(1)
		if err != nil {
			return err
		}
		switch {
		case args[0] != countPerKey && args[0] != countPerOrg:
			return a.Errf("want %s or %s, got %q", countPerKey, countPerOrg, args[0])
		case args[0] == countPerKey && len(args) > 1:
			return a.Errf("tiers are only for %s", countPerOrg)
		}
		h.Count, h.CountTiers = args[0], args[1:]
		if len(h.CountTiers) == 0 {
			h.CountTiers = nil
		}
		return nil
	})
}

// rateList reads one or more rates (contract.ParseRates), kept as one
// comma-separated string, or one placeholder.
func rateList(dst *string) caddyopt.Option {
	return caddyopt.Func(func(a *caddyopt.Args) error {
		args, err := a.AtLeast(1)
		if err != nil {
			return err
		}
		v := strings.Join(args, ",")
		if strings.Contains(v, "{") {
			if len(args) > 1 {
				return a.Errf("a placeholder must be the only rate")
			}
		} else if _, err := contract.ParseRates(v); err != nil {
			return a.Errf("%v", err)
		}
		*dst = v
		return nil
	})
}

// UnmarshalCaddyfile parses the global option block:
//
//	civic_rate_limit {
//	    redis            [<url>] [{ … }]    # internal/redisconn.Option: addrs, mode, tls … (docs/redis.md)
//	    addrs            <addr...>          # also: redis { addrs … }
//	    master_name      <name>             # also in the redis block
//	    username         <name>             # also in the redis block
//	    password         <secret>           # {env.X}; also in the redis block
//	    key_prefix       <prefix>
//	    timeout          <duration>         # 0 … 50ms (0: the default, 50ms)
//	    on_store_error   local|open|closed
//	    lease            <share>            # 0 … 0.05
//	    breaker_failures <n>
//	    breaker_cooldown <duration>         # 0: the default, 1s
//	    max_keys         <n>
//	    usage {                             # usage per key, flushed to PostgreSQL
//	        postgres       <dsn>            # {env.DATABASE_URL}
//	        flush_interval <duration>       # 1s … 1m, default 5s
//	        max_cells      <n>              # (key, minute) cells between flushes, default 100000
//	        operations     on|off           # per key, hour and operation (docs/design.md D70), default on
//	        max_operations <n>              # (key, hour, operation) cells between flushes, default 100000
//	        max_operations_per_key <n>      # a key's operations an hour before "other", default 1000
//	    }
//	}
//
// Each option may be given once.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	redisFields := redisconn.Fields(&a.Config)
	return caddyopt.Read(d, "civic_rate_limit", caddyopt.Block{
		"redis":            redisconn.Option(&a.Config),
		"addrs":            redisFields["addrs"],
		"master_name":      redisFields["master_name"],
		"username":         redisFields["username"],
		"password":         redisFields["password"],
		"key_prefix":       caddyopt.String(&a.KeyPrefix),
		"timeout":          caddyopt.DurationIn(&a.Timeout, 0, 50*time.Millisecond),
		"on_store_error":   caddyopt.OneOf(&a.OnStoreError, modeLocal, modeOpen, modeClosed),
		"lease":            caddyopt.Float(&a.Lease, 0, 0.05),
		"breaker_failures": caddyopt.Positive(&a.BreakerFailures),
		"breaker_cooldown": caddyopt.DurationIn(&a.BreakerCooldown, 0, caddyopt.Forever),
		"max_keys":         caddyopt.Positive(&a.MaxKeys),
		"usage":            a.usageBlock(),
	})
}

func (a *App) usageBlock() caddyopt.Option {
	c := new(UsageConfig)
	return caddyopt.Sub(caddyopt.Block{
		"postgres":               caddyopt.String(&c.Postgres),
		"flush_interval":         caddyopt.DurationIn(&c.FlushInterval, time.Second, time.Minute),
		"max_cells":              caddyopt.Positive(&c.MaxCells),
		"operations":             caddyopt.OnOff(&c.Operations),
		"max_operations":         caddyopt.Positive(&c.MaxOperations),
		"max_operations_per_key": caddyopt.Positive(&c.MaxOperationsPerKey),
	}).Then(func() { a.Usage = c })
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Handler)(nil)
	_ caddyfile.Unmarshaler = (*App)(nil)
)
