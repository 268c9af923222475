package mcp

import (
	"testing"

	"github.com/civicgate/civicgate/internal/adapttest"
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
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes
// with valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, mcpCfg("family bills bills bill\nfamily members Query.members\nallowed_origins https://claude.ai http://localhost:6274\n"+
		"max_sessions_per_key 3\nmax_sessions 50\nsession_idle_timeout 1m\nmax_message 64KiB"))
	adapttest.Adapts(t, ":8080 {\ncivic_mcp /v1/mcp {\ntools t.json\nschema s.graphqls\n}\n}\n")
}
