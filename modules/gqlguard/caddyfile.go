package gqlguard

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/dustin/go-humanize"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("graphql_guard", caddyopt.Handler[Guard]())
	httpcaddyfile.RegisterDirectiveOrder("graphql_guard", httpcaddyfile.Before, "request_header")
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	graphql_guard [<matcher>] {
//	    schema            <path>
//	    max_body          <size>       # e.g. 128KiB
//	    max_depth         <n>
//	    max_aliases       <n>
//	    max_root_fields   <n>
//	    max_tokens        <n>
//	    max_directives    <n>
//	    max_cost          <n>
//	    default_list_size <n>
//	    limit_argument    <name>
//	    introspection     on|off
//	    measure_only
//	    entitlements      <placeholder expression>
//	    family            <name> <rootField>...
//	    cache_size        <n>
//	}
func (g *Guard) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	// No inline schema argument: a path would be read as a path matcher.
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch opt := d.Val(); opt {
		case "schema":
			if err := caddyopt.OneArg(d, &g.Schema); err != nil {
				return err
			}
		case "max_body":
			var s string
			if err := caddyopt.OneArg(d, &s); err != nil {
				return err
			}
			n, err := humanize.ParseBytes(s)
			if err != nil || n == 0 || n > 1<<40 {
				return d.Errf("max_body: invalid size %q", s)
			}
			g.MaxBody = int64(n)
		case "max_depth":
			if err := intArg(d, &g.MaxDepth); err != nil {
				return err
			}
		case "max_aliases":
			if err := intArg(d, &g.MaxAliases); err != nil {
				return err
			}
		case "max_root_fields":
			if err := intArg(d, &g.MaxRootFields); err != nil {
				return err
			}
		case "max_tokens":
			var n int64
			if err := intArg(d, &n); err != nil {
				return err
			}
			g.MaxTokens = int(n)
		case "max_directives":
			if err := intArg(d, &g.MaxDirectives); err != nil {
				return err
			}
		case "max_cost":
			if err := intArg(d, &g.MaxCost); err != nil {
				return err
			}
		case "default_list_size":
			if err := intArg(d, &g.DefaultListSize); err != nil {
				return err
			}
		case "cache_size":
			var n int64
			if err := intArg(d, &n); err != nil {
				return err
			}
			g.CacheSize = int(n)
		case "limit_argument":
			if err := caddyopt.OneArg(d, &g.LimitArgument); err != nil {
				return err
			}
		case "introspection":
			var s string
			if err := caddyopt.OneArg(d, &s); err != nil {
				return err
			}
			var on bool
			switch s {
			case "on":
				on = true
			case "off":
			default:
				return d.Errf("introspection: want on or off, got %q", s)
			}
			g.Introspection = &on
		case "measure_only":
			if d.NextArg() {
				return d.ArgErr()
			}
			g.MeasureOnly = true
		case "entitlements":
			if err := caddyopt.OneArg(d, &g.Entitlements); err != nil {
				return err
			}
		case "family":
			args := d.RemainingArgs()
			if len(args) < 2 {
				return d.Errf("family: want <name> <rootField>...")
			}
			if g.Families == nil {
				g.Families = map[string][]string{}
			}
			if _, dup := g.Families[args[0]]; dup {
				return d.Errf("family %s declared twice", args[0])
			}
			g.Families[args[0]] = args[1:]
		default:
			return d.Errf("unrecognized graphql_guard option %q", opt)
		}
	}
	return nil
}

func intArg(d *caddyfile.Dispenser, dst *int64) error {
	opt := d.Val()
	var s string
	if err := caddyopt.OneArg(d, &s); err != nil {
		return err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return d.Errf("%s: want a positive integer, got %q", opt, s)
	}
	*dst = n
	return nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Guard)(nil)
