package gqlguard

import (
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
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
	"max_directives": "5", "max_cost": "50", "introspection_max_depth": "13", "default_list_size": "10", "cache_size": "16", "limit_argument": "first",
	"introspection": "off", "measure_only": "", "schema_view": "entitled", "entitlements": "{civic.families}",
	"operations": "query", "methods": "GET POST", "trusted_documents": "/m.json", "trusted_only": "free",
	"subscriptions": "{\n max_per_key 3\n }", "persisted_queries": "{\n max_entries 10\n }",
	"deprecations": "{\n Query.old since 2025-01-01T00:00:00Z\n }",
}

// TestCaddyfileErrors: each configuration is refused with its message.
func TestCaddyfileErrors(t *testing.T) {
	configs := map[string]adapttest.Refusal{
		"extra argument":            {site("graphql_guard * extra {\n schema /x\n}"), "wrong argument count or unexpected line ending after 'extra'"},
		"unknown option":            {guard("schema /x", "max_depht 3"), `graphql_guard: unknown option "max_depht"`},
		"bad size":                  {guard("max_body lots"), `graphql_guard: max_body: want a size from 1 B to 1.0 TiB (e.g. 128KiB), got "lots"`},
		"zero size":                 {guard("max_body 0"), `graphql_guard: max_body: want a size from 1 B to 1.0 TiB (e.g. 128KiB), got "0"`},
		"huge size":                 {guard("max_body 2TiB"), `graphql_guard: max_body: want a size from 1 B to 1.0 TiB (e.g. 128KiB), got "2TiB"`},
		"zero limit":                {guard("max_depth 0"), `graphql_guard: max_depth: want a positive integer, got "0"`},
		"negative tokens":           {guard("max_tokens -1"), `graphql_guard: max_tokens: want a positive integer, got "-1"`},
		"word cache size":           {guard("cache_size lots"), `graphql_guard: cache_size: want a positive integer, got "lots"`},
		"limit no arg":              {guard("max_cost"), "wrong argument count or unexpected line ending after 'max_cost'"},
		"schema two args":           {guard("schema /x /y"), "wrong argument count or unexpected line ending after '/y'"},
		"introspection value":       {guard("introspection maybe"), `graphql_guard: introspection: want on or off, got "maybe"`},
		"schema_view value":         {guard("schema_view tier"), `graphql_guard: schema_view: want full or entitled, got "tier"`},
		"family without root":       {guard("family bills"), "wrong argument count or unexpected line ending after 'bills'"},
		"duplicate family":          {guard("family a x", "family a y"), "graphql_guard: family a given twice"},
		"measure_only arg":          {guard("measure_only yes"), "wrong argument count or unexpected line ending after 'yes'"},
		"option with a block":       {guard("max_depth 3 {\n x\n }"), "graphql_guard: max_depth takes no block"},
		"entitlements no arg":       {guard("entitlements"), "wrong argument count or unexpected line ending after 'entitlements'"},
		"limit_argument 2 args":     {guard("limit_argument first last"), "wrong argument count or unexpected line ending after 'last'"},
		"unknown operation":         {guard("operations query fetch"), `graphql_guard: operations: unknown operation type "fetch" (query, mutation, subscription)`},
		"operation twice":           {guard("operations query query"), "graphql_guard: operations: operation type query given twice"},
		"operations no arg":         {guard("operations"), "wrong argument count or unexpected line ending after 'operations'"},
		"unknown method":            {guard("methods GET PUT"), `graphql_guard: methods: unknown method "PUT" (GET, POST)`},
		"lower-case method":         {guard("methods post"), `graphql_guard: methods: unknown method "post" (GET, POST)`},
		"subscriptions unknown":     {guard("subscriptions {\n max_per_socket 3\n }"), `graphql_guard subscriptions: unknown option "max_per_socket"`},
		"subscriptions zero":        {guard("subscriptions {\n max_per_key 0\n }"), `graphql_guard subscriptions: max_per_key: want a positive integer, got "0"`},
		"subscriptions arg":         {guard("subscriptions on"), "wrong argument count or unexpected line ending after 'on'"},
		"subscriptions redis twice": {guard("subscriptions {\n redis redis://a:6379\n redis redis://b:6379\n }"), "graphql_guard subscriptions: redis given twice"},
		"subscriptions redis mode":  {guard("subscriptions {\n redis {\n mode ring\n }\n }"), "graphql_guard subscriptions redis: mode"},
		"dedup value":               {guard("subscriptions {\n dedup tier\n }"), `graphql_guard subscriptions: dedup: want families, org, key or off, got "tier"`},
		"upstream_header value":     {guard("subscriptions {\n upstream_header X-A\n }"), "wrong argument count or unexpected line ending after 'X-A'"},
		"send_buffer zero":          {guard("subscriptions {\n send_buffer 0\n }"), `graphql_guard subscriptions: send_buffer: want an integer from 1 to 1048576, got "0"`},
		"init_timeout short":        {guard("subscriptions {\n init_timeout 10ms\n }"), `graphql_guard subscriptions: init_timeout: want a duration from 1s to 10m0s, got "10ms"`},
		"apq unknown":               {guard("persisted_queries {\n redis_url x\n }"), `graphql_guard persisted_queries: unknown option "redis_url"`},
		"apq bytes":                 {guard("persisted_queries {\n max_bytes 1\n }"), `graphql_guard persisted_queries: max_bytes: want a size from 1.0 KiB to 16 GiB (e.g. 128KiB), got "1"`},
		"deprecations argument":     {guard("deprecations on {\n Query.old\n }"), "wrong argument count or unexpected line ending after 'on'"},
		"deprecation setting":       {guard("deprecations {\n Query.old until 2026-01-01T00:00:00Z\n }"), `graphql_guard deprecations: Query.old: unknown setting "until" (since, sunset, link)`},
		"deprecation odd args":      {guard("deprecations {\n Query.old since\n }"), "wrong argument count or unexpected line ending after 'since'"},
		"deprecation date":          {guard("deprecations {\n Query.old since 2026-01-01\n }"), `graphql_guard deprecations: Query.old: since: want an RFC 3339 time (2026-01-31T00:00:00Z), got "2026-01-01"`},
		"deprecation sunset first":  {guard("deprecations {\n Query.old since 2026-01-01T00:00:00Z sunset 2025-01-01T00:00:00Z\n }"), "graphql_guard deprecations: Query.old: sunset is before since"},
		"deprecation link":          {guard("deprecations {\n Query.old link /docs\n }"), `graphql_guard deprecations: Query.old: link: want an absolute http(s) URL without <>"',; or white space, got "/docs"`},
		"deprecation link markup":   {guard("deprecations {\n Query.old link \"https://x.example/>;rel=x\"\n }"), `graphql_guard deprecations: Query.old: link: want an absolute http(s) URL`},
		"deprecation setting twice": {guard("deprecations {\n Query.old link https://a.example link https://b.example\n }"), "graphql_guard deprecations: Query.old: link given twice"},
		"deprecation twice":         {guard("deprecations {\n Query.old\n Query.old\n }"), "graphql_guard deprecations: Query.old given twice"},
		"apq twice inside":          {guard("persisted_queries {\n ttl 1h\n ttl 2h\n }"), "graphql_guard persisted_queries: ttl given twice"},
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
