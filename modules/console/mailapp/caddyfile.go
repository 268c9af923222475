package mailapp

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("civic_mail", caddyopt.App[App]("civic_mail"))
}

// UnmarshalCaddyfile sets up the app from the global option block:
//
//	civic_mail {
//	    database <dsn>
//	    from <address>
//	    smtp <smtp://user:pass@host:port?tls=starttls|implicit|none> | folder <dir>
//	    smtp_ca <PEM file>                 # trusted besides the system's roots
//	    site_url <the console's URL>
//	    max_pending <n>
//	    interval <duration>
//	    notices {
//	        key_expiry <duration>|off      # default 7d
//	        deprecations on|off            # default on
//	        quota on|off                   # default on: 80 % / 100 % of a quota
//	        interval <duration>            # default 1m
//	    }
//	}
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_mail", caddyopt.Block{
		"database":    caddyopt.String(&a.Database),
		"from":        caddyopt.String(&a.From),
		"smtp":        caddyopt.String(&a.SMTP),
		"smtp_ca":     caddyopt.String(&a.SMTPCA),
		"folder":      caddyopt.String(&a.Folder),
		"site_url":    caddyopt.String(&a.SiteURL),
		"max_pending": caddyopt.Positive(&a.MaxPending),
		"interval":    caddyopt.PositiveDuration(&a.Interval),
		"notices":     a.noticesBlock(),
	})
}

func (a *App) noticesBlock() caddyopt.Option {
	n := &NoticesConfig{}
	return caddyopt.Sub(caddyopt.Block{
		"key_expiry": caddyopt.Func(func(o *caddyopt.Args) error {
			v, err := o.One()
			if err != nil {
				return err
			}
			if v == "off" {
				n.KeyExpiryOff = true
				return nil
			}
			d, err := caddy.ParseDuration(v)
			if err != nil || d <= 0 {
				return o.Errf("want a positive duration (7d) or off, got %q", v)
			}
			n.KeyExpiry = caddy.Duration(d)
			return nil
		}),
		"deprecations": caddyopt.OnOff(&n.Deprecations),
		"quota":        caddyopt.OnOff(&n.Quota),
		"interval":     caddyopt.PositiveDuration(&n.Interval),
	}).Then(func() { a.Notices = n })
}

// Interface guard
var _ caddyfile.Unmarshaler = (*App)(nil)
