package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// handlerLists calls visit with every list of handlers in an adapted config
// (a route's "handle", at any depth).
func handlerLists(v any, visit func([]string)) {
	switch x := v.(type) {
	case map[string]any:
		if hs, ok := x["handle"].([]any); ok {
			var names []string
			for _, h := range hs {
				if m, ok := h.(map[string]any); ok {
					name, _ := m["handler"].(string)
					names = append(names, name)
				}
			}
			visit(names)
		}
		for _, c := range x {
			handlerLists(c, visit)
		}
	case []any:
		for _, c := range x {
			handlerLists(c, visit)
		}
	}
}

// TestShippedCaddyfilesTracingSwitch adapts every shipped Caddyfile that
// serves clients with CIVICGATE_TRACING unset, off and on: unset or off, no
// tracing handler exists at all; on, civic_tracing is the first handler of the
// site and, on the gateways, civic_trace_upstream is right before each
// reverse_proxy (after graphql_cache), so the backend's span is the upstream
// span's child and a cache hit makes no upstream span.
func TestShippedCaddyfilesTracingSwitch(t *testing.T) {
	t.Parallel()
	bins.Build(t)
	root := stack.RepoRoot(t)
	for _, file := range []string{"Caddyfile", "Caddyfile.local", "Caddyfile.replica", "Caddyfile.edge"} {
		for _, mode := range []string{"", "off", "on"} {
			cmd := exec.Command(bins.Civicgate, "adapt", "--config", filepath.Join("caddyfile", file), "--adapter", "caddyfile")
			cmd.Dir = root
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CIVICGATE_TRACING=") {
					env = append(env, kv)
				}
			}
			env = append(env, "CIVICGATE_DOMAIN=api.example.org", "CIVICGATE_ACME_EMAIL=ops@example.org",
				"DATABASE_URL=postgres://db/civicgate", "REDIS_URL=redis://redis:6379/0")
			if mode != "" { // "": unset
				env = append(env, "CIVICGATE_TRACING="+mode)
			}
			cmd.Env = env
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s, tracing %q: adapt: %v", file, mode, err)
			}
			var cfg any
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			servers, upstreams, proxies := 0, 0, 0
			handlerLists(cfg, func(names []string) {
				for i, n := range names {
					switch n {
					case "tracing":
						t.Errorf("%s, tracing %q: Caddy's tracing handler in %v", file, mode, names)
					case "civic_tracing":
						servers++
						if i != 0 {
							t.Errorf("%s: civic_tracing is not the first handler: %v", file, names)
						}
					case "civic_trace_upstream":
						upstreams++
						if i+1 >= len(names) || names[i+1] != "reverse_proxy" || i == 0 || names[i-1] != "graphql_cache" {
							t.Errorf("%s: civic_trace_upstream not between graphql_cache and reverse_proxy: %v", file, names)
						}
					case "reverse_proxy":
						proxies++
					}
				}
			})
			gateway := file != "Caddyfile.edge"
			switch {
			case mode != "on" && servers+upstreams != 0:
				t.Errorf("%s, tracing %q: %d civic_tracing and %d civic_trace_upstream handlers", file, mode, servers, upstreams)
			case mode == "on" && servers != 1:
				t.Errorf("%s, tracing on: %d civic_tracing handlers, want 1 (the API site)", file, servers)
			case mode == "on" && gateway && (upstreams != 2 || proxies != 2):
				t.Errorf("%s, tracing on: %d upstream spans for %d reverse_proxy handlers, want 2 and 2", file, upstreams, proxies)
			}
		}
	}
}
