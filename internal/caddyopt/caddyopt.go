// Package caddyopt builds the Caddyfile parsers every civicgate module
// registers: a global option that becomes a Caddy app, and a handler
// directive, both from the type's own UnmarshalCaddyfile — and the one reader
// every UnmarshalCaddyfile reads its block with (Read, reader.go; the option
// kinds, values.go) — and the placeholder templates those options may hold,
// parsed once at provision (Template, template.go).
package caddyopt

import (
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
			return nil, d.Errf("%s: global option given twice", name)
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
