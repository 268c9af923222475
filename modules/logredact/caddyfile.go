package logredact

import (
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap/zapcore"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

// UnmarshalCaddyfile sets up the encoder from Caddyfile tokens:
//
//	format civic_redact {
//	    wrap <encoder> [{ <encoder options> }]
//	}
//
// wrap may be given once.
func (e *Encoder) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_redact", caddyopt.Block{
		"wrap": caddyopt.Func(func(o *caddyopt.Args) error {
			if !d.NextArg() {
				return d.ArgErr()
			}
			name := d.Val()
			unm, err := caddyfile.UnmarshalModule(d, "caddy.logging.encoders."+name)
			if err != nil {
				return err
			}
			enc, ok := unm.(zapcore.Encoder)
			if !ok {
				return o.Errf("%s is not a log encoder", name)
			}
			e.WrappedRaw = caddyconfig.JSONModuleObject(enc, "format", name, nil)
			return nil
		}),
	})
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Encoder)(nil)
