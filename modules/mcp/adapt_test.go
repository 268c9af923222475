package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
	_ "github.com/civicgate/civicgate/modules/auth"      // civic_auth, for the order golden file
	_ "github.com/civicgate/civicgate/modules/gqlguard"  // graphql_guard, likewise
	_ "github.com/civicgate/civicgate/modules/ratelimit" // civic_rate_limit, likewise
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func mcpCfg(opts string) string {
	return ":8080 {\ncivic_mcp {\ntools t.json\nschema s.graphqls\n" + opts + "\n}\n}\n"
}

func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"argument":          {":8080 {\ncivic_mcp tools\n}\n", "wrong argument count"},
		"unknown":           {mcpCfg("stateless"), `civic_mcp: unknown option "stateless"`},
		"tools twice":       {mcpCfg("tools u.json"), "civic_mcp: tools given twice"},
		"family no fields":  {mcpCfg("family bills"), "wrong argument count"},
		"family twice":      {mcpCfg("family bills bills\nfamily bills bill"), "civic_mcp: family bills given twice"},
		"origin path":       {mcpCfg("allowed_origins https://claude.ai/x"), `civic_mcp: allowed_origins: want an origin scheme://host[:port], got "https://claude.ai/x"`},
		"origin scheme":     {mcpCfg("allowed_origins claude.ai"), `want an origin scheme://host[:port], got "claude.ai"`},
		"origin none":       {mcpCfg("allowed_origins"), "wrong argument count"},
		"per key zero":      {mcpCfg("max_sessions_per_key 0"), "civic_mcp: max_sessions_per_key: want a positive integer"},
		"sessions bad":      {mcpCfg("max_sessions many"), "civic_mcp: max_sessions: want a positive integer"},
		"idle too short":    {mcpCfg("session_idle_timeout 10ms"), "civic_mcp: session_idle_timeout: want a duration"},
		"max_message small": {mcpCfg("max_message 10"), `civic_mcp: max_message: want a size from 1.0 KiB to 64 MiB (e.g. 128KiB), got "10"`},
		"max_message twice": {mcpCfg("max_message 1MiB\nmax_message 2MiB"), "civic_mcp: max_message given twice"},
		"message_rate none": {mcpCfg("message_rate"), "wrong argument count"},
		"message_rate bad":  {mcpCfg("message_rate 600/fortnight"), "civic_mcp: message_rate:"},
		"message_rate dup":  {mcpCfg("message_rate 10/s 600/s"), "civic_mcp: message_rate:"},
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes
// with valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, mcpCfg("family bills bills bill\nfamily members Query.members\nallowed_origins https://claude.ai http://localhost:6274\n"+
		"max_sessions_per_key 3\nmax_sessions 50\nsession_idle_timeout 1m\nmax_message 64KiB"))
	adapttest.Adapts(t, ":8080 {\ncivic_mcp /v1/mcp {\ntools t.json\nschema s.graphqls\n}\n}\n")
}

// A relative tools path is the Caddyfile's neighbour, as import resolves
// files: in the file that names it, also when that file is imported from
// another directory; absolute paths and placeholders stay as written.
func TestToolsPathBesideCaddyfile(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "conf")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	routes := "civic_mcp {\ntools %s\nschema s.graphqls\n}\n"
	for path, want := range map[string]string{
		"mcp-tools.json":        filepath.Join(sub, "mcp-tools.json"),
		"../tools/t.json":       filepath.Join(dir, "tools", "t.json"),
		"/etc/civicgate/t.json": "/etc/civicgate/t.json",
		"{env.TOOLS}":           "{env.TOOLS}",
	} {
		if err := os.WriteFile(filepath.Join(sub, "routes.caddy"), []byte(fmt.Sprintf(routes, path)), 0o644); err != nil {
			t.Fatal(err)
		}
		main := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(main, []byte(":8080 {\nimport conf/routes.caddy\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":8080 {\nimport conf/routes.caddy\n}\n"), map[string]any{"filename": main})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out); !strings.Contains(got, `"tools":`+strconv.Quote(want)) {
			t.Errorf("tools %s: adapted to %s, want %q", path, got, want)
		}
	}
}
