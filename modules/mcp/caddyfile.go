package mcp

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("civic_mcp", caddyopt.Handler[Handler]())
	// After civic_auth (registered after basic_auth), before civic_rate_limit
	// (registered after forward_auth): the caller is known, and a tool call's
	// GraphQL request is what the rate limit and the guard see.
	httpcaddyfile.RegisterDirectiveOrder("civic_mcp", httpcaddyfile.Before, "forward_auth")
}

// UnmarshalCaddyfile parses
//
//	civic_mcp [<matcher>] {
//	    tools                <manifest path>     # the tool manifest (docs/mcp.md); relative: to this Caddyfile
//	    schema               <path>              # graphql_guard's schema
//	    family               <name> <rootField>... # repeated: graphql_guard's family lines
//	    allowed_origins      <origin>...         # browser origins let in (default none)
//	    max_sessions_per_key <n>                 # default 10
//	    max_sessions         <n>                 # default 1000
//	    session_idle_timeout <duration>          # default 10m
//	    max_message          <size>              # default 1MiB: a POST body, a tool's answer
//	    message_rate         <rate>...           # default 600/m: per key, the messages but tools/call
//	}
//
// Every option but family may be given once.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_mcp", caddyopt.Block{
		"tools": caddyopt.Func(func(a *caddyopt.Args) error {
			v, err := a.One()
			if err != nil {
				return err
			}
			h.Tools = besideCaddyfile(a.Dispenser().File(), v)
			return nil
		}),
		"schema": caddyopt.String(&h.Schema),
		"family": caddyopt.EachNamed(1, func(a *caddyopt.Args) error {
			if h.Families == nil {
				h.Families = map[string][]string{}
			}
			h.Families[a.Name()] = a.Rest()
			return nil
		}),
		"allowed_origins": caddyopt.Func(func(a *caddyopt.Args) error {
			origins, err := a.AtLeast(1)
			if err != nil {
				return err
			}
			for i, o := range origins {
				if origins[i], err = checkOrigin(o); err != nil {
					return a.Errf("%v", err)
				}
			}
			h.AllowedOrigins = origins
			return nil
		}),
		"max_sessions_per_key": caddyopt.Positive(&h.MaxSessionsPerKey),
		"max_sessions":         caddyopt.Positive(&h.MaxSessions),
		"session_idle_timeout": caddyopt.DurationIn(&h.SessionIdleTimeout, time.Second, 24*time.Hour),
		"max_message":          caddyopt.Size(&h.MaxMessage, 1<<10, 64<<20),
		"message_rate": caddyopt.Func(func(a *caddyopt.Args) error {
			rates, err := a.AtLeast(1)
			if err != nil {
				return err
			}
			h.MessageRate = strings.Join(rates, " ")
			if _, err := contract.ParseRates(h.MessageRate); err != nil {
				return a.Errf("%v", err)
			}
			return nil
		}),
	})
}

// besideCaddyfile resolves a relative manifest path against the directory
// of the Caddyfile that names it, as import resolves its files: the
// shipped routes.caddy names mcp-tools.json beside it, wherever the
// directory is (caddyfile/ in the repository, /etc/civicgate in the
// image). A path with a placeholder is left as it is.
func besideCaddyfile(caddyfile, path string) string {
	if filepath.IsAbs(path) || strings.Contains(path, "{") || caddyfile == "" {
		return path
	}
	return filepath.Join(filepath.Dir(caddyfile), path)
}

// checkOrigin accepts a browser origin, scheme://host[:port], and returns it
// lower-cased (as browsers send it).
func checkOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("want an origin scheme://host[:port], got %q", o)
	}
	return strings.ToLower(o), nil
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
