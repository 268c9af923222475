package ratelimit

import (
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

// handler puts a civic_rate_limit block with opts in a site.
func handler(opts string) string { return ":8080 {\ncivic_rate_limit {\n" + opts + "\n}\n}\n" }

// global puts a civic_rate_limit global option block with opts before a site.
func global(opts string) string {
	return "{\ncivic_rate_limit {\n" + opts + "\n}\n}\n:8080 {\nrespond ok\n}\n"
}

// Each option with a valid value: all of them are once-only.
var (
	handlerOnce = map[string]string{"key": "{remote_host}", "rate": "10/s", "policy": "anonymous", "cost": "{civic.cost_budget}", "count": "per_organization"}
	globalOnce  = map[string]string{
		"redis": "{env.REDIS_URL}", "addrs": "10.0.0.1:26379 10.0.0.2:26379", "master_name": "civic", "username": "u",
		"password": "{env.REDIS_PASSWORD}", "key_prefix": "rl:", "timeout": "20ms", "on_store_error": "closed", "lease": "0.02",
		"breaker_failures": "5", "breaker_cooldown": "2s", "max_keys": "10",
	}
)

func TestCaddyfileErrors(t *testing.T) {
	configs := map[string]adapttest.Refusal{
		"handler argument":     {":8080 {\ncivic_rate_limit 10/s\n}\n", "wrong argument count or unexpected line ending after '10/s'"},
		"handler unknown":      {handler("burst 3"), `civic_rate_limit: unknown option "burst"`},
		"handler two values":   {handler("policy a b"), "wrong argument count or unexpected line ending after 'b'"},
		"handler same window":  {handler("rate 1/s 2/s"), `civic_rate_limit: rate: rate list "1/s,2/s": two quotas over 1s`},
		"handler five rates":   {handler("rate 1/s 2/m 3/h 4/d 5/2s"), `civic_rate_limit: rate: rate list "1/s,2/m,3/h,4/d,5/2s": more than 4 rates`},
		"handler placeholder+": {handler("rate {civic.rate} 1/s"), `civic_rate_limit: rate: a placeholder must be the only rate`},
		"handler bad cost":     {handler("cost lots"), `civic_rate_limit: cost: rate "lots": want <quota>/<window>, e.g. 100/m`},
		"handler count":        {handler("count per_team"), `civic_rate_limit: count: want per_key or per_organization, got "per_team"`},
		"handler count tiers":  {handler("count per_key free"), `civic_rate_limit: count: tiers are only for per_organization`},
		"handler count none":   {handler("count"), "wrong argument count or unexpected line ending after 'count'"},
		"handler cost two":     {handler("cost 1/s 2/m"), "wrong argument count or unexpected line ending after '2/m'"},
		"global usage no dsn":  {global("usage {\nflush_interval 0s\n}"), `civic_rate_limit usage: flush_interval: want a duration from 1s to 1m0s, got "0s"`},
		"global usage unknown": {global("usage {\nflush 5s\n}"), `civic_rate_limit usage: unknown option "flush"`},
		"global usage ops":     {global("usage {\noperations maybe\n}"), `civic_rate_limit usage: operations: want on or off, got "maybe"`},
		"global usage max ops": {global("usage {\nmax_operations 0\n}"), `civic_rate_limit usage: max_operations: want a positive integer, got "0"`},
		"global usage per key": {global("usage {\nmax_operations_per_key -1\n}"), `civic_rate_limit usage: max_operations_per_key: want a positive integer, got "-1"`},
		"handler no value":     {handler("key"), "wrong argument count or unexpected line ending after 'key'"},
		"handler bad rate":     {handler("rate lots"), `civic_rate_limit: rate: rate "lots": want <quota>/<window>, e.g. 100/m`},
		"handler zero rate":    {handler("rate 0/s"), `civic_rate_limit: rate: rate "0/s": quota must be a positive integer`},
		"global argument":      {"{\ncivic_rate_limit extra {\n}\n}\n:8080 {\nrespond ok\n}\n", "wrong argument count or unexpected line ending after 'extra'"},
		"global unknown":       {global("redis_url x"), `civic_rate_limit: unknown option "redis_url"`},
		"global lease":         {global("lease lots"), `civic_rate_limit: lease: want a number from 0 to 0.05, got "lots"`},
		"global lease big":     {global("lease 0.5"), `civic_rate_limit: lease: want a number from 0 to 0.05, got "0.5"`},
		"global lease NaN":     {global("lease NaN"), `civic_rate_limit: lease: want a number from 0 to 0.05, got "NaN"`},
		"global timeout":       {global("timeout soon"), `civic_rate_limit: timeout: want a duration from 0s to 50ms, got "soon"`},
		"global timeout long":  {global("timeout 1s"), `civic_rate_limit: timeout: want a duration from 0s to 50ms, got "1s"`},
		"global cooldown":      {global("breaker_cooldown -1s"), `civic_rate_limit: breaker_cooldown: want a duration of at least 0s, got "-1s"`},
		"global max_keys":      {global("max_keys 0"), `civic_rate_limit: max_keys: want a positive integer, got "0"`},
		"global failures":      {global("breaker_failures three"), `civic_rate_limit: breaker_failures: want a positive integer, got "three"`},
		"global store error":   {global("on_store_error fail"), `civic_rate_limit: on_store_error: want local, open or closed, got "fail"`},
		"global addrs no args": {global("addrs"), "wrong argument count or unexpected line ending after 'addrs'"},
		"global redis block":   {global("redis x {\ny\n}"), `civic_rate_limit redis: unknown option "y"`},
		"global redis tls":     {global("redis {\ntls {\nca\n}\n}"), "wrong argument count or unexpected line ending after 'ca'"},
		"global redis mode":    {global("redis {\nmode ring\n}"), `civic_rate_limit redis: mode: want standalone, cluster or sentinel, got "ring"`},
		// a second civic_rate_limit global block is refused instead of silently replacing the first
		"global given twice": {"{\ncivic_rate_limit {\nkey_prefix a:\n}\ncivic_rate_limit {\nkey_prefix b:\n}\n}\n:8080 {\nrespond ok\n}",
			"civic_rate_limit: global option given twice"},
	}
	for opt, v := range handlerOnce {
		configs["handler "+opt+" twice"] = adapttest.Refusal{Cfg: handler(opt + " " + v + "\n" + opt + " " + v), Msg: "civic_rate_limit: " + opt + " given twice"}
	}
	for opt, v := range globalOnce {
		configs["global "+opt+" twice"] = adapttest.Refusal{Cfg: global(opt + " " + v + "\n" + opt + " " + v), Msg: "civic_rate_limit: " + opt + " given twice"}
	}
	adapttest.Refused(t, configs)
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt — every option once, the bounds of the ranges.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, "{\ncivic_rate_limit {\nlease 0.02\ntimeout 20ms\nmax_keys 10\n}\n}\n:8080 {\ncivic_rate_limit {\nkey a\nrate 1/s\n}\n}")
	var h, g string
	for opt, v := range handlerOnce {
		h += opt + " " + v + "\n"
	}
	for opt, v := range globalOnce {
		g += opt + " " + v + "\n"
	}
	adapttest.Adapts(t, "{\ncivic_rate_limit {\n"+g+"}\n}\n"+handler(h))
	adapttest.Adapts(t, handler("rate {civic.rate}"))
	adapttest.Adapts(t, handler("rate 100/m 20000/d\ncost 50000/h"))
	adapttest.Adapts(t, global("usage {\npostgres {env.DATABASE_URL}\nflush_interval 1s\nmax_cells 10\n}"))
	adapttest.Adapts(t, global("lease 0\ntimeout 0s\nbreaker_cooldown 0s"))
	adapttest.Adapts(t, global("lease 0.05\ntimeout 50ms"))
}
