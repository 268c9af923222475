package gqlguard

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

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
//	    max_body          <size>       # e.g. 128KiB; 1 B … 1 TiB
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
//	    family            <name> <rootField>...   # repeated: one line per family
//	    cache_size        <n>
//	}
//
// Every option but family may be given once.
func (g *Guard) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// No inline schema argument: a path would be read as a path matcher.
	return caddyopt.Read(d, "graphql_guard", caddyopt.Block{
		"schema":            caddyopt.String(&g.Schema),
		"max_body":          caddyopt.Size(&g.MaxBody, 1, 1<<40),
		"max_depth":         caddyopt.Positive(&g.MaxDepth),
		"max_aliases":       caddyopt.Positive(&g.MaxAliases),
		"max_root_fields":   caddyopt.Positive(&g.MaxRootFields),
		"max_tokens":        caddyopt.Positive(&g.MaxTokens),
		"max_directives":    caddyopt.Positive(&g.MaxDirectives),
		"max_cost":          caddyopt.Positive(&g.MaxCost),
		"default_list_size": caddyopt.Positive(&g.DefaultListSize),
		"cache_size":        caddyopt.Positive(&g.CacheSize),
		"limit_argument":    caddyopt.String(&g.LimitArgument),
		"introspection":     caddyopt.OnOff(&g.Introspection),
		"measure_only":      caddyopt.Flag(&g.MeasureOnly),
		"entitlements":      caddyopt.String(&g.Entitlements),
		"family": caddyopt.EachNamed(1, func(a *caddyopt.Args) error {
			if g.Families == nil {
				g.Families = map[string][]string{}
			}
			g.Families[a.Name()] = a.Rest()
			return nil
		}),
	})
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Guard)(nil)
