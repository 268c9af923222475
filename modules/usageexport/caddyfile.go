package usageexport

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/usageexport/export"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("civic_usage_export", caddyopt.App[App]("civic_usage_export"))
}

// UnmarshalCaddyfile parses the global option:
//
//	civic_usage_export {
//	    database    <dsn>                 # required, e.g. {env.DATABASE_URL}
//	    sink        <url>                 # required, e.g. https://openmeter.example/api/v1/events
//	    auth_header <name> <value>        # e.g. Authorization "Bearer {env.OPENMETER_TOKEN}"
//	    source      <uri>                 # default civicgate; the same on every gateway
//	    interval    <duration>            # default 1m
//	    settle      <duration>            # default 2m, at least 10s
//	    timeout     <duration>            # per POST, default 30s
//	    batch       <n>                   # events per POST, default 500, at most 10000
//	    since       <RFC 3339 time>       # first hour when the cursor is new; default every hour held
//	}
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_usage_export", caddyopt.Block{
		"database": caddyopt.String(&a.Database),
		"sink":     caddyopt.String(&a.Sink),
		"auth_header": caddyopt.Func(func(args *caddyopt.Args) error {
			name, value, err := args.Two()
			if err != nil {
				return err
			}
			a.AuthHeader, a.AuthValue = name, value
			return nil
		}),
		"source":   caddyopt.String(&a.Source),
		"interval": caddyopt.PositiveDuration(&a.Interval),
		"settle":   caddyopt.DurationIn(&a.Settle, export.MinSettle, caddyopt.Forever),
		"timeout":  caddyopt.PositiveDuration(&a.Timeout),
		"batch":    caddyopt.Int(&a.Batch, 1, export.MaxBatch),
		"since": caddyopt.Checked(&a.Since, func(s string) error {
			_, err := time.Parse(time.RFC3339, s)
			return err
		}),
	})
}

// Interface guards
var _ caddyfile.Unmarshaler = (*App)(nil)
