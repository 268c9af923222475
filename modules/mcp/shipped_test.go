package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/civicgate/civicgate/modules/console"
	_ "github.com/civicgate/civicgate/modules/gqlcache"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	_ "github.com/civicgate/civicgate/modules/logredact"
	"github.com/civicgate/civicgate/modules/mcp/tooldef"
	_ "github.com/civicgate/civicgate/modules/tracing"
	_ "github.com/civicgate/civicgate/modules/webhooks"
)

// TestShippedRoute: every shipped Caddyfile that imports routes.caddy
// adapts with civic_mcp on /v1/mcp in the handle of /v1/graphql, after
// civic_auth and before civic_rate_limit and graphql_guard (so a tool call
// meets the handlers a POST meets), with graphql_guard's schema and family
// lines (both blocks import families.caddy: docs/design.md D62), and its
// manifest — found beside routes.caddy — loads against them.
func TestShippedRoute(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CIVICGATE_DOMAIN", "api.example.org")
	t.Setenv("CIVICGATE_ACME_EMAIL", "ops@example.org")
	for _, name := range []string{"Caddyfile", "Caddyfile.local", "Caddyfile.replica"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(root, "caddyfile", name)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(src, map[string]any{"filename": path})
			if err != nil {
				t.Fatal(err)
			}
			var cfg any
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			chains := handlerChains(cfg)
			var found bool
			for _, chain := range chains {
				mcp, ok := chain["civic_mcp"]
				if !ok {
					continue
				}
				found = true
				guard := chain["graphql_guard"]
				for _, later := range []string{"civic_rate_limit", "graphql_guard"} {
					if chain[later] == nil || chain[later].index < mcp.index {
						t.Errorf("%s is not after civic_mcp", later)
					}
				}
				if chain["civic_auth"] == nil || chain["civic_auth"].index > mcp.index {
					t.Error("civic_auth is not before civic_mcp")
				}
				if guard == nil || !reflect.DeepEqual(mcp.cfg["families"], guard.cfg["families"]) || mcp.cfg["schema"] != guard.cfg["schema"] {
					t.Fatalf("civic_mcp's families and schema differ from graphql_guard's:\n%v %v\n%v %v",
						mcp.cfg["families"], mcp.cfg["schema"], guard.cfg["families"], guard.cfg["schema"])
				}
				if tools := mcp.cfg["tools"]; tools != filepath.Join(root, "caddyfile", "mcp-tools.json") {
					t.Errorf("tools %v", tools)
				}
				if paths := mcp.match; !reflect.DeepEqual(paths, []any{"/v1/mcp"}) {
					t.Errorf("civic_mcp matches %v, want /v1/mcp", paths)
				}
				schema, err := document.LoadSchema(filepath.Join(root, "backend", "schema", "records.graphqls"))
				if err != nil {
					t.Fatal(err)
				}
				families := map[string][]string{}
				for f, fields := range mcp.cfg["families"].(map[string]any) {
					for _, x := range fields.([]any) {
						families[f] = append(families[f], x.(string))
					}
				}
				set, err := tooldef.LoadFile(mcp.cfg["tools"].(string), tooldef.Config{Schema: schema.AST, Families: families})
				if err != nil {
					t.Fatal(err)
				}
				if len(set.Tools()) != 6 {
					t.Errorf("%d tools", len(set.Tools()))
				}
			}
			if !found {
				t.Fatal("no civic_mcp handler")
			}
		})
	}
}

// placed is a handler in a subroute's chain: its position, its
// configuration, and the paths its route matches.
type placed struct {
	index int
	cfg   map[string]any
	match any
}

// handlerChains returns, for every list of routes in the adapted
// configuration, its handlers by name in order.
func handlerChains(v any) []map[string]*placed {
	var out []map[string]*placed
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if routes, ok := v["routes"].([]any); ok {
				chain := map[string]*placed{}
				i := 0
				for _, r := range routes {
					route, _ := r.(map[string]any)
					var paths any
					if m, ok := route["match"].([]any); ok && len(m) > 0 {
						paths = m[0].(map[string]any)["path"]
					}
					hs, _ := route["handle"].([]any)
					for _, h := range hs {
						h, _ := h.(map[string]any)
						if name, ok := h["handler"].(string); ok {
							if _, seen := chain[name]; !seen {
								chain[name] = &placed{index: i, cfg: h, match: paths}
							}
							i++
						}
					}
				}
				out = append(out, chain)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}
