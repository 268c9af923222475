package webhooks

import (
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("civic_webhooks", caddyopt.App[App]("civic_webhooks"))
	httpcaddyfile.RegisterHandlerDirective("civic_webhooks", caddyopt.Handler[Handler]())
	httpcaddyfile.RegisterDirectiveOrder("civic_webhooks", httpcaddyfile.Before, "respond")
}

func parseSwitch(d *caddyfile.Dispenser, v string) (bool, error) {
	switch v {
	case "on", "true":
		return true, nil
	case "off", "false":
		return false, nil
	}
	return false, d.Errf("%s: %q must be on or off", d.Val(), v)
}

// UnmarshalCaddyfile sets up the app from the global option block:
//
//	civic_webhooks {
//	    database <dsn>
//	    secret_key <material> [<older material>...]
//	    deliver on|off
//	    workers <n>
//	    max_in_flight <n>
//	    max_in_flight_per_org <n>
//	    timeout <duration>
//	    poll_interval <duration>
//	    batch <n>
//	    rotation_overlap <duration>
//	    retention <duration>
//	    insecure_allow_loopback [on|off|<host:port>...]
//	    tier <name> <rate> [<family>...]    # repeated: one line per tier (import tiers.caddy)
//	}
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return options(d, "tier", func(opt string) error {
		switch opt {
		case "database":
			if !d.Args(&a.Database) || d.NextArg() {
				return d.ArgErr()
			}
		case "secret_key":
			a.SecretKeys = d.RemainingArgs()
			if len(a.SecretKeys) == 0 {
				return d.ArgErr()
			}
		case "deliver":
			var v string
			if err := caddyopt.OneArg(d, &v); err != nil {
				return err
			}
			on, err := parseSwitch(d, v)
			if err != nil {
				return err
			}
			a.Deliver = &on
		case "insecure_allow_loopback":
			return a.unmarshalLoopback(d)
		case "tier":
			return a.unmarshalTier(d)
		case "workers", "max_in_flight", "max_in_flight_per_org", "batch":
			var n int
			if err := caddyopt.PositiveInt(d, &n); err != nil {
				return err
			}
			switch opt {
			case "workers":
				a.Workers = n
			case "max_in_flight":
				a.MaxInFlight = n
			case "max_in_flight_per_org":
				a.MaxInFlightPerOrg = n
			default:
				a.Batch = n
			}
		case "timeout", "poll_interval", "rotation_overlap", "retention":
			var dur caddy.Duration
			if err := caddyopt.Duration(d, &dur); err != nil {
				return err
			}
			switch opt {
			case "timeout":
				a.Timeout = dur
			case "poll_interval":
				a.Poll = dur
			case "retention":
				a.Retention = dur
			default:
				a.RotationOverlap = dur
			}
		default:
			return d.Errf("unknown civic_webhooks option %q", opt)
		}
		return nil
	})
}

// unmarshalLoopback reads `insecure_allow_loopback` (on), `… on|off` or
// `… <host:port>...` (exactly those loopback targets).
func (a *App) unmarshalLoopback(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch {
	case len(args) == 0:
		a.InsecureAllowLoopback = true
	case len(args) == 1 && !strings.Contains(args[0], ":"):
		on, err := parseSwitch(d, args[0])
		if err != nil {
			return d.Errf("insecure_allow_loopback: %q must be on, off or host:port pairs", args[0])
		}
		a.InsecureAllowLoopback = on
	default:
		if _, err := parseLoopbackTargets(args); err != nil {
			return d.Err(err.Error())
		}
		a.InsecureAllowLoopbackTargets = args
	}
	return nil
}

// unmarshalTier reads one `tier <name> <rate> [<family>...]` line.
func (a *App) unmarshalTier(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 2 {
		return d.ArgErr()
	}
	tc := TierConfig{Rate: args[1], Families: args[2:]}
	if err := checkTier(args[0], tc); err != nil {
		return d.Err(err.Error())
	}
	if _, dup := a.Tiers[args[0]]; dup {
		return d.Errf("tier %s defined twice", args[0])
	}
	if a.Tiers == nil {
		a.Tiers = map[string]TierConfig{}
	}
	a.Tiers[args[0]] = tc
	return nil
}

// options is caddyopt.Options, except that the option named repeatable may
// be given any number of times (tier lines).
func options(d *caddyfile.Dispenser, repeatable string, option func(opt string) error) error {
	d.Next() // the option name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		opt := d.Val()
		if seen[opt] && opt != repeatable {
			return d.Errf("duplicate %s", opt)
		}
		seen[opt] = true
		if err := option(opt); err != nil {
			return err
		}
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from the directive:
//
//	civic_webhooks [<matcher>] {
//	    prefix /v1
//	    org {civic.org}
//	    env {civic.env}
//	    families {civic.families}
//	    max_replay 10000
//	    max_endpoints 20
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Options(d, func(opt string) error {
		switch opt {
		case "prefix", "org", "env", "families":
			var v string
			if err := caddyopt.OneArg(d, &v); err != nil {
				return err
			}
			switch opt {
			case "prefix":
				if v != "" && v[0] != '/' {
					return d.Errf("prefix %q must start with /", v)
				}
				h.Prefix = v
			case "org":
				h.Org = v
			case "env":
				h.Env = v
			default:
				h.Families = v
			}
		case "max_replay", "max_endpoints":
			var n int
			if err := caddyopt.PositiveInt(d, &n); err != nil {
				return err
			}
			if opt == "max_replay" {
				h.MaxReplay = n
			} else {
				h.MaxEndpoints = n
			}
		default:
			return d.Errf("unknown civic_webhooks option %q", opt)
		}
		return nil
	})
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*App)(nil)
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)
