package gqlcache

import (
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/internal/redisconn"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("graphql_cache", caddyopt.Handler[Handler]())
	// graphql_guard is ordered before request_header, which comes before
	// reverse_proxy: the cache lands between them.
	httpcaddyfile.RegisterDirectiveOrder("graphql_cache", httpcaddyfile.Before, "reverse_proxy")
	httpcaddyfile.RegisterGlobalOption("graphql_cache", caddyopt.App[App]("graphql_cache"))
}

// UnmarshalCaddyfile parses
//
//	graphql_cache {
//	    scope <placeholder>... | private   # default {civic.families}
//	    ttl   <duration>                   # default 60s
//	    tags  <tag>...                     # default: {graphql.families}
//	    enabled on|off                     # default on; off: pass everything through
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "graphql_cache", caddyopt.Block{
		"scope": caddyopt.Strings(&h.Scope),
		"enabled": caddyopt.Func(func(a *caddyopt.Args) error {
			v, err := a.One()
			if err != nil {
				return err
			}
			on, ok := caddyopt.ParseOnOff(v)
			if !ok {
				return a.Errf("want on or off, got %q", v)
			}
			h.Off = !on
			return nil
		}),
		"ttl": caddyopt.PositiveDuration(&h.TTL),
		"tags": caddyopt.Func(func(a *caddyopt.Args) error {
			tags, err := a.AtLeast(1)
			if err != nil {
				return err
			}
			for _, t := range tags {
				if strings.ContainsAny(t, ",{}") {
					return a.Errf("want tags without commas or placeholders, got %q", t)
				}
			}
			h.Tags = tags
			return nil
		}),
	})
}

// UnmarshalCaddyfile parses the global option:
//
//	graphql_cache {
//	    max_bytes       <size>    # default 64MiB
//	    max_entry_bytes <size>    # default 1MiB
//	    invalidate postgres <dsn> {
//	        channel <name>        # default civicgate_change_events
//	        feed    <table>       # e.g. change_events; without it the payload names the tags
//	    }
//	    shared redis [<url>] {    # needs invalidate … { feed … }
//	        key_prefix <prefix>   # default civicgate:cache:
//	        timeout    <duration> # default 50ms
//	        addrs, mode, master_name, username, password, sentinel_username,
//	        sentinel_password, db, tls { ca; cert; key; server_name }
//	                              # as in every redis block (docs/redis.md)
//	    }
//	}
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	err := caddyopt.Read(d, "graphql_cache", caddyopt.Block{
		"max_bytes":       caddyopt.Size(&a.MaxBytes, 1<<10, 1<<40),
		"max_entry_bytes": caddyopt.Size(&a.MaxEntryBytes, 1, 1<<30),
		"invalidate":      caddyopt.Func(a.readInvalidate),
		"shared":          caddyopt.Func(a.readShared),
	})
	if err == nil && a.Shared != nil && (a.Invalidate == nil || a.Invalidate.Feed == "") {
		return d.Errf("graphql_cache: shared redis needs invalidate postgres <dsn> { feed <table> }: " +
			"without a change feed there is no global order to check shared entries against")
	}
	return err
}

// readInvalidate reads `invalidate postgres <dsn> { channel …; feed … }`.
func (a *App) readInvalidate(args *caddyopt.Args) error {
	d := args.Dispenser()
	nesting := d.Nesting()
	kind, dsn, err := args.Two()
	if err != nil {
		return err
	}
	if kind != "postgres" {
		return args.Errf("want postgres <dsn>, got %q", kind)
	}
	inv := &InvalidateConfig{Postgres: dsn}
	seen := map[string]bool{}
	for d.NextBlock(nesting) {
		opt := d.Val()
		var dst *string
		switch opt {
		case "channel":
			dst = &inv.Channel
		case "feed":
			dst = &inv.Feed
		default:
			return d.Errf("graphql_cache invalidate: unknown option %q", opt)
		}
		if seen[opt] {
			return d.Errf("graphql_cache invalidate: %s given twice", opt)
		}
		seen[opt] = true
		if !d.NextArg() {
			return d.ArgErr()
		}
		*dst = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
		if !identifier.MatchString(*dst) {
			return d.Errf("graphql_cache invalidate: %s: want an SQL identifier, got %q", opt, *dst)
		}
	}
	a.Invalidate = inv
	return nil
}

// readShared reads `shared redis [<url>] { key_prefix …; timeout …; the
// redis block's options (addrs, mode, master_name, username, password,
// sentinel_username, sentinel_password, db, tls { … }) }`.
func (a *App) readShared(args *caddyopt.Args) error {
	d := args.Dispenser()
	if !d.NextArg() {
		return d.ArgErr()
	}
	if kind := d.Val(); kind != "redis" {
		return args.Errf("want redis [<url>], got %q", kind)
	}
	sh := &SharedConfig{}
	if d.NextArg() {
		sh.URL = d.Val()
	}
	block := redisconn.Fields(&sh.Config)
	block["key_prefix"] = caddyopt.String(&sh.KeyPrefix)
	block["timeout"] = caddyopt.PositiveDuration(&sh.Timeout)
	// the rest of the segment (more arguments, the block) is read from its
	// own dispenser, the URL or `redis` standing for the block's name
	if err := caddyopt.Read(d.NewFromNextSegment(), "graphql_cache shared", block); err != nil {
		return err
	}
	if sh.Config.IsZero() {
		return args.Errf("want redis <url> or a block with addrs")
	}
	a.Shared = sh
	return nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Handler)(nil)
	_ caddyfile.Unmarshaler = (*App)(nil)
)
