package gqlcache

import (
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
	_ "github.com/civicgate/civicgate/modules/gqlguard" // graphql_guard, for the order golden file
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func handlerCfg(opts string) string { return ":8080 {\ngraphql_cache {\n" + opts + "\n}\n}\n" }

func globalCfg(opts string) string {
	return "{\ngraphql_cache {\n" + opts + "\n}\n}\n:8080 {\nrespond ok\n}\n"
}

func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"handler argument":     {":8080 {\ngraphql_cache 60s\n}\n", "wrong argument count or unexpected line ending after '60s'"},
		"handler unknown":      {handlerCfg("vary Accept"), `graphql_cache: unknown option "vary"`},
		"handler enabled bad":  {handlerCfg("enabled maybe"), `graphql_cache: enabled: want on or off, got "maybe"`},
		"handler ttl zero":     {handlerCfg("ttl 0s"), `graphql_cache: ttl: want a duration above zero, got "0s"`},
		"handler ttl twice":    {handlerCfg("ttl 1s\nttl 2s"), "graphql_cache: ttl given twice"},
		"handler scope empty":  {handlerCfg("scope"), "wrong argument count"},
		"handler tags comma":   {handlerCfg("tags bills,votes"), `graphql_cache: tags: want tags without commas or placeholders, got "bills,votes"`},
		"handler tags ph":      {handlerCfg("tags {graphql.families}"), `graphql_cache: tags: want tags without commas or placeholders`},
		"global unknown":       {globalCfg("redis x"), `graphql_cache: unknown option "redis"`},
		"global max_bytes":     {globalCfg("max_bytes lots"), `graphql_cache: max_bytes: want a size from 1.0 KiB to 1.0 TiB (e.g. 128KiB), got "lots"`},
		"global entry bytes":   {globalCfg("max_entry_bytes 0"), `graphql_cache: max_entry_bytes: want a size from 1 B to 1.0 GiB (e.g. 128KiB), got "0"`},
		"global twice":         {globalCfg("max_bytes 1MiB\nmax_bytes 2MiB"), "graphql_cache: max_bytes given twice"},
		"invalidate kind":      {globalCfg("invalidate redis x"), `graphql_cache: invalidate: want postgres <dsn>, got "redis"`},
		"invalidate no dsn":    {globalCfg("invalidate postgres"), "wrong argument count"},
		"invalidate unknown":   {globalCfg("invalidate postgres {env.DATABASE_URL} {\ntable x\n}"), `graphql_cache invalidate: unknown option "table"`},
		"invalidate feed sql":  {globalCfg("invalidate postgres {env.DATABASE_URL} {\nfeed x;drop\n}"), `graphql_cache invalidate: feed: want an SQL identifier, got "x;drop"`},
		"invalidate feed two":  {globalCfg("invalidate postgres {env.DATABASE_URL} {\nfeed a\nfeed b\n}"), "graphql_cache invalidate: feed given twice"},
		"invalidate feed args": {globalCfg("invalidate postgres {env.DATABASE_URL} {\nfeed a b\n}"), "wrong argument count"},
		"invalidate twice":     {globalCfg("invalidate postgres a\ninvalidate postgres b"), "graphql_cache: invalidate given twice"},
		"global given twice": {"{\ngraphql_cache {\nmax_bytes 1MiB\n}\ngraphql_cache {\nmax_bytes 2MiB\n}\n}\n:8080 {\nrespond ok\n}",
			"graphql_cache: global option given twice"},
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes
// with valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, handlerCfg("ttl 1s\nscope private\ntags bills votes"))
	adapttest.Adapts(t, globalCfg("max_bytes 1KiB\nmax_entry_bytes 1\ninvalidate postgres {env.DATABASE_URL} {\nchannel c\nfeed public.change_events\n}"))
	adapttest.Adapts(t, globalCfg("invalidate postgres {env.DATABASE_URL}"))
}
