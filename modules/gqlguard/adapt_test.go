package gqlguard

import (
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

// site puts a graphql_guard directive in a site block.
func site(directive string) string { return ":8080 {\n" + directive + "\nrespond ok\n}" }

// guard is site with a graphql_guard block holding lines.
func guard(lines ...string) string {
	return site("graphql_guard {\n " + strings.Join(lines, "\n ") + "\n}")
}

// onceOnly: every option but family, each with a valid value.
var onceOnly = map[string]string{
	"schema": "/x", "max_body": "1MiB", "max_depth": "3", "max_aliases": "4", "max_root_fields": "2", "max_tokens": "100",
	"max_directives": "5", "max_cost": "50", "default_list_size": "10", "cache_size": "16", "limit_argument": "first",
	"introspection": "off", "measure_only": "", "entitlements": "{civic.families}",
}

// TestCaddyfileErrors: each configuration is refused with its message.
func TestCaddyfileErrors(t *testing.T) {
	configs := map[string]adapttest.Refusal{
		"extra argument":        {site("graphql_guard * extra {\n schema /x\n}"), "wrong argument count or unexpected line ending after 'extra'"},
		"unknown option":        {guard("schema /x", "max_depht 3"), `graphql_guard: unknown option "max_depht"`},
		"bad size":              {guard("max_body lots"), `graphql_guard: max_body: want a size from 1 B to 1.0 TiB (e.g. 128KiB), got "lots"`},
		"zero size":             {guard("max_body 0"), `graphql_guard: max_body: want a size from 1 B to 1.0 TiB (e.g. 128KiB), got "0"`},
		"huge size":             {guard("max_body 2TiB"), `graphql_guard: max_body: want a size from 1 B to 1.0 TiB (e.g. 128KiB), got "2TiB"`},
		"zero limit":            {guard("max_depth 0"), `graphql_guard: max_depth: want a positive integer, got "0"`},
		"negative tokens":       {guard("max_tokens -1"), `graphql_guard: max_tokens: want a positive integer, got "-1"`},
		"word cache size":       {guard("cache_size lots"), `graphql_guard: cache_size: want a positive integer, got "lots"`},
		"limit no arg":          {guard("max_cost"), "wrong argument count or unexpected line ending after 'max_cost'"},
		"schema two args":       {guard("schema /x /y"), "wrong argument count or unexpected line ending after '/y'"},
		"introspection value":   {guard("introspection maybe"), `graphql_guard: introspection: want on or off, got "maybe"`},
		"family without root":   {guard("family bills"), "wrong argument count or unexpected line ending after 'bills'"},
		"duplicate family":      {guard("family a x", "family a y"), "graphql_guard: family a given twice"},
		"measure_only arg":      {guard("measure_only yes"), "wrong argument count or unexpected line ending after 'yes'"},
		"option with a block":   {guard("max_depth 3 {\n x\n }"), "graphql_guard: max_depth takes no block"},
		"entitlements no arg":   {guard("entitlements"), "wrong argument count or unexpected line ending after 'entitlements'"},
		"limit_argument 2 args": {guard("limit_argument first last"), "wrong argument count or unexpected line ending after 'last'"},
	}
	for opt, v := range onceOnly {
		line := strings.TrimSpace(opt + " " + v)
		configs[opt+" twice"] = adapttest.Refusal{Cfg: guard(line, line), Msg: "graphql_guard: " + opt + " given twice"}
	}
	adapttest.Refused(t, configs)
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt — every once-only option once, families with distinct
// names.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, guard("schema /x", "max_depth 3", "max_body 1MiB", "introspection off", "family a x", "family b x y", "measure_only"))
	lines := []string{"family a x"}
	for opt, v := range onceOnly {
		lines = append(lines, strings.TrimSpace(opt+" "+v))
	}
	adapttest.Adapts(t, guard(lines...))
	adapttest.Adapts(t, guard("max_body 1TiB", "introspection true"))
}
