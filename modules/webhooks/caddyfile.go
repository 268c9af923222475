package webhooks

import (
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("civic_webhooks", caddyopt.App[App]("civic_webhooks"))
	httpcaddyfile.RegisterHandlerDirective("civic_webhooks", caddyopt.Handler[Handler]())
	httpcaddyfile.RegisterDirectiveOrder("civic_webhooks", httpcaddyfile.Before, "respond")
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
//	    notice_interval <duration>
//	    insecure_allow_loopback [on|off|<host:port>...]
//	    tier <name> <rate>... [cost <rate>] [<family>...]   # repeated: one line per tier (import tiers.caddy)
//	    event_families <family>...
//	}
//
// Every option but tier may be given once; each tier name once.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_webhooks", caddyopt.Block{
		"database":                caddyopt.String(&a.Database),
		"secret_key":              caddyopt.Strings(&a.SecretKeys),
		"deliver":                 caddyopt.OnOff(&a.Deliver),
		"workers":                 caddyopt.Positive(&a.Workers),
		"max_in_flight":           caddyopt.Positive(&a.MaxInFlight),
		"max_in_flight_per_org":   caddyopt.Positive(&a.MaxInFlightPerOrg),
		"batch":                   caddyopt.Positive(&a.Batch),
		"timeout":                 caddyopt.PositiveDuration(&a.Timeout),
		"poll_interval":           caddyopt.PositiveDuration(&a.Poll),
		"rotation_overlap":        caddyopt.PositiveDuration(&a.RotationOverlap),
		"retention":               caddyopt.PositiveDuration(&a.Retention),
		"notice_interval":         caddyopt.PositiveDuration(&a.NoticeInterval),
		"insecure_allow_loopback": caddyopt.Func(a.unmarshalLoopback),
		"tier":                    caddyopt.EachNamed(1, a.unmarshalTier),
		"event_families":          caddyopt.Strings(&a.EventFamilies),
	})
}

// unmarshalLoopback reads `insecure_allow_loopback` (on), `… on|off` or
// `… <host:port>...` (exactly those loopback targets).
func (a *App) unmarshalLoopback(o *caddyopt.Args) error {
	args := o.Dispenser().RemainingArgs()
	switch {
	case len(args) == 0:
		a.InsecureAllowLoopback = true
	case len(args) == 1 && !strings.Contains(args[0], ":"):
		on, ok := caddyopt.ParseOnOff(args[0])
		if !ok {
			return o.Errf("want on, off or host:port pairs, got %q", args[0])
		}
		a.InsecureAllowLoopback = on
	default:
		if _, err := parseLoopbackTargets(args); err != nil {
			return o.Dispenser().Errf("civic_webhooks: %v", err)
		}
		a.InsecureAllowLoopbackTargets = args
	}
	return nil
}

// unmarshalTier reads one `tier <name> <rate>... [cost <rate>] [<family>...]`
// line (contract.ParseTierLine, the parser civic_auth reads the same
// tiers.caddy with); only the families matter here.
func (a *App) unmarshalTier(o *caddyopt.Args) error {
	tl, err := contract.ParseTierLine(o.Rest())
	if err != nil {
		return o.Dispenser().Errf("civic_webhooks: tier %s: %v", o.Name(), err)
	}
	tc := TierConfig{Rate: tl.Rates, Families: tl.Families}
	if err := checkTier(o.Name(), tc); err != nil {
		return o.Dispenser().Errf("civic_webhooks: %v", err)
	}
	if a.Tiers == nil {
		a.Tiers = map[string]TierConfig{}
	}
	a.Tiers[o.Name()] = tc
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
//
// Each option may be given once.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_webhooks", caddyopt.Block{
		"prefix": caddyopt.Checked(&h.Prefix, func(v string) error {
			if v != "" && v[0] != '/' {
				return fmt.Errorf("%q must start with /", v)
			}
			return nil
		}),
		"org":           caddyopt.String(&h.Org),
		"env":           caddyopt.String(&h.Env),
		"families":      caddyopt.String(&h.Families),
		"max_replay":    caddyopt.Positive(&h.MaxReplay),
		"max_endpoints": caddyopt.Positive(&h.MaxEndpoints),
	})
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*App)(nil)
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)
