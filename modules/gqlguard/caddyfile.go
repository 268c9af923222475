package gqlguard

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe"
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
//	    introspection_max_depth <n>   # default 15; an introspection answered from a view (docs/design.md D75)
//	    measure_only
//	    entitlements      <placeholder expression>
//	    family            <name> <rootField>...   # repeated; Type.field or a bare name
//	    cache_size        <n>
//	    schema_view       full|entitled   # default full; docs/design.md D67
//	    operations        query|mutation|subscription...   # default: all three
//	    methods           GET|POST...                      # default: POST
//	    subscriptions {
//	        max_per_connection <n>     # default 100
//	        max_per_key        <n>     # default 1000
//	        init_timeout       <duration>  # default 10s
//	        redis [<url>] [{ … }]      # max_per_key across instances (docs/redis.md); default: per instance
//	        key_prefix         <prefix>    # default civicgate:
//	        upstream           ws[s]://<host>/<path>  # terminate here (docs/design.md D54)
//	        upstream_header    <name> <value>  # repeated; placeholders
//	        dedup              families|org|key|off  # default off
//	        max_lifetime       <duration>  # default 0: none
//	        keepalive          <duration>  # default 30s
//	        pong_timeout       <duration>  # default 10s
//	        send_buffer        <n>         # default 64
//	    }
//	    persisted_queries {            # Apollo APQ
//	        redis [<url>] [{ … }]      # {env.X}; a redis block (docs/redis.md); default: memory only
//	        key_prefix  <prefix>
//	        ttl         <duration>     # default 24h
//	        max_entries <n>            # default 10000
//	        max_bytes   <size>         # default 16MiB
//	    }
//	    trusted_documents <manifest path>
//	    trusted_only      [<tier>...]  # no tier: every caller
//	    deprecations {                 # docs/design.md D69
//	        <coordinate> [since <RFC3339>] [sunset <RFC3339>] [link <url>]   # repeated
//	    }
//	}
//
// Every option but family may be given once.
func (g *Guard) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// No inline schema argument: a path would be read as a path matcher.
	return caddyopt.Read(d, "graphql_guard", caddyopt.Block{
		"schema":                  caddyopt.String(&g.Schema),
		"max_body":                caddyopt.Size(&g.MaxBody, 1, 1<<40),
		"max_depth":               caddyopt.Positive(&g.MaxDepth),
		"max_aliases":             caddyopt.Positive(&g.MaxAliases),
		"max_root_fields":         caddyopt.Positive(&g.MaxRootFields),
		"max_tokens":              caddyopt.Positive(&g.MaxTokens),
		"max_directives":          caddyopt.Positive(&g.MaxDirectives),
		"max_cost":                caddyopt.Positive(&g.MaxCost),
		"introspection_max_depth": caddyopt.Positive(&g.IntrospectionMaxDepth),
		"default_list_size":       caddyopt.Positive(&g.DefaultListSize),
		"cache_size":              caddyopt.Positive(&g.CacheSize),
		"limit_argument":          caddyopt.String(&g.LimitArgument),
		"introspection":           caddyopt.OnOff(&g.Introspection),
		"measure_only":            caddyopt.Flag(&g.MeasureOnly),
		"entitlements":            caddyopt.String(&g.Entitlements),
		"schema_view":             caddyopt.OneOf(&g.SchemaView, SchemaViewFull, SchemaViewEntitled),
		"operations": caddyopt.Func(func(a *caddyopt.Args) error {
			words, err := a.AtLeast(1)
			if err != nil {
				return err
			}
			if _, err := parseOperations(words); err != nil {
				return a.Errf("%v", err)
			}
			g.Operations = words
			return nil
		}),
		"methods": caddyopt.Func(func(a *caddyopt.Args) error {
			words, err := a.AtLeast(1)
			if err != nil {
				return err
			}
			if err := checkMethods(words); err != nil {
				return a.Errf("%v", err)
			}
			g.Methods = words
			return nil
		}),
		"subscriptions":     g.subscriptionsBlock(),
		"persisted_queries": g.persistedQueriesBlock(),
		"trusted_documents": caddyopt.String(&g.TrustedDocuments),
		"deprecations":      g.deprecationsBlock(),
		"trusted_only": caddyopt.Func(func(a *caddyopt.Args) error {
			tiers := a.Dispenser().RemainingArgs()
			if len(tiers) == 0 {
				tiers = []string{"*"}
			}
			g.TrustedOnly = tiers
			return nil
		}),
		"family": caddyopt.EachNamed(1, func(a *caddyopt.Args) error {
			if g.Families == nil {
				g.Families = map[string][]string{}
			}
			g.Families[a.Name()] = a.Rest()
			return nil
		}),
	})
}

func (g *Guard) subscriptionsBlock() caddyopt.Option {
	c := new(SubscriptionsConfig)
	return caddyopt.Sub(caddyopt.Block{
		"max_per_connection": caddyopt.Positive(&c.MaxPerConnection),
		"max_per_key":        caddyopt.Positive(&c.MaxPerKey),
		"init_timeout":       caddyopt.DurationIn(&c.InitTimeout, time.Second, 10*time.Minute),
		"redis":              redisconn.Option(&c.Config),
		"key_prefix":         caddyopt.String(&c.KeyPrefix),
		"upstream":           caddyopt.String(&c.Upstream),
		"upstream_header": caddyopt.EachNamed(1, func(a *caddyopt.Args) error {
			rest := a.Rest()
			if len(rest) != 1 {
				return a.Errf("want: upstream_header <name> <value>")
			}
			if c.UpstreamHeaders == nil {
				c.UpstreamHeaders = map[string]string{}
			}
			c.UpstreamHeaders[a.Name()] = rest[0]
			return nil
		}),
		"dedup":        caddyopt.OneOf(&c.Dedup, subscribe.DedupFamilies, subscribe.DedupOrg, subscribe.DedupKey, subscribe.DedupOff),
		"max_lifetime": caddyopt.DurationIn(&c.MaxLifetime, time.Second, 365*24*time.Hour),
		"keepalive":    caddyopt.DurationIn(&c.Keepalive, time.Second, time.Hour),
		"pong_timeout": caddyopt.DurationIn(&c.PongTimeout, time.Second, time.Hour),
		"send_buffer":  caddyopt.Int(&c.SendBuffer, 1, 1<<20),
	}).Then(func() { g.Subscriptions = c })
}

func (g *Guard) persistedQueriesBlock() caddyopt.Option {
	c := new(PersistedQueriesConfig)
	return caddyopt.Sub(caddyopt.Block{
		"redis":       redisconn.Option(&c.Config),
		"key_prefix":  caddyopt.String(&c.KeyPrefix),
		"ttl":         caddyopt.DurationIn(&c.TTL, time.Second, 365*24*time.Hour),
		"max_entries": caddyopt.Positive(&c.MaxEntries),
		"max_bytes":   caddyopt.Size(&c.MaxBytes, 1<<10, 1<<34),
	}).Then(func() { g.PersistedQueries = c })
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Guard)(nil)
