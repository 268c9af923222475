// Package caddyopt builds the Caddyfile parsers every civicgate module
// registers: a global option that becomes a Caddy app, and a handler
// directive, both from the type's own UnmarshalCaddyfile.
package caddyopt

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// App returns the parser of the global option `name`: its block is
// unmarshaled into a new T and configured as the app `name`. The option may
// appear once.
func App[T any, P interface {
	*T
	caddyfile.Unmarshaler
}](name string) httpcaddyfile.UnmarshalGlobalFunc {
	return func(d *caddyfile.Dispenser, existing any) (any, error) {
		if existing != nil {
			return nil, d.Errf("%s global option given more than once", name)
		}
		app := P(new(T))
		if err := app.UnmarshalCaddyfile(d); err != nil {
			return nil, err
		}
		return httpcaddyfile.App{Name: name, Value: caddyconfig.JSON(app, nil)}, nil
	}
}

// Handler returns the parser of a handler directive: its tokens are
// unmarshaled into a new T.
func Handler[T any, P interface {
	*T
	caddyfile.Unmarshaler
	caddyhttp.MiddlewareHandler
}]() httpcaddyfile.UnmarshalHandlerFunc {
	return func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		m := P(new(T))
		err := m.UnmarshalCaddyfile(h.Dispenser)
		return m, err
	}
}

// OneArg reads the single argument of the current option into dst.
func OneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// PositiveInt reads the single argument of the current option as an
// integer ≥ 1.
func PositiveInt(d *caddyfile.Dispenser, dst *int) error {
	opt := d.Val()
	var v string
	if err := OneArg(d, &v); err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return d.Errf("%s: want a positive integer, got %q", opt, v)
	}
	*dst = n
	return nil
}

// Duration reads the single argument of the current option as a duration
// above zero (Caddy syntax, e.g. 30s, 2m, 1d).
func Duration(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	opt := d.Val()
	var v string
	if err := OneArg(d, &v); err != nil {
		return err
	}
	dur, err := caddy.ParseDuration(v)
	if err != nil || dur <= 0 {
		return d.Errf("%s: want a duration above zero, got %q", opt, v)
	}
	*dst = caddy.Duration(dur)
	return nil
}

// Options reads a directive or global option that takes no arguments and a
// block of options, each given at most once: it consumes the name, then
// calls option with the dispenser on each option's name (option reads the
// arguments). A repeated option is an error.
func Options(d *caddyfile.Dispenser, option func(opt string) error) error {
	d.Next() // the directive or option name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		opt := d.Val()
		if seen[opt] {
			return d.Errf("duplicate %s", opt)
		}
		seen[opt] = true
		if err := option(opt); err != nil {
			return err
		}
	}
	return nil
}
