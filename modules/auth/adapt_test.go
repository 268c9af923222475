package auth

import (
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

// global wraps civic_auth options in a global option block with a site.
func global(opts string) string {
	return "{\ncivic_auth {\ntier free 1/m bills\n" + opts + "\n}\n}\n:8080 {\ncivic_auth\n}"
}

// directive puts a civic_auth directive in a site.
func directive(d string) string { return ":8080 {\n" + d + "\n}" }

// onceOnly: every global option but tier, each with a valid value.
var onceOnly = map[string]string{
	"keys": "file /k.json", "environment": "live", "identity_secret": "s", "identity_ttl": "30s", "cache_ttl": "1s",
	"negative_cache_ttl": "1s", "cache_size": "10", "negative_cache_size": "10", "lookup_timeout": "2s",
	"failed_lookups": "20/m", "failed_lookup_clients": "100", "watch_interval": "1s",
}

func TestCaddyfileErrors(t *testing.T) {
	configs := map[string]adapttest.Refusal{
		"directive argument":     {directive("civic_auth * extra"), "wrong argument count or unexpected line ending after 'extra'"},
		"directive unknown":      {directive("civic_auth {\nrequire_famly bills\n}"), `civic_auth: unknown option "require_famly"`},
		"require_family no arg":  {directive("civic_auth {\nrequire_family\n}"), "wrong argument count or unexpected line ending after 'require_family'"},
		"require_family twice":   {directive("civic_auth {\nrequire_family bills\nrequire_family members\n}"), "civic_auth: require_family given twice"},
		"global argument":        {"{\ncivic_auth extra {\n}\n}\n:8080 {\nrespond ok\n}", "wrong argument count or unexpected line ending after 'extra'"},
		"global given twice":     {"{\ncivic_auth {\ntier free 1/m\n}\ncivic_auth {\ntier free 1/m\n}\n}\n:8080 {\nrespond ok\n}", "civic_auth: global option given twice"},
		"global unknown option":  {global("keyz file x"), `civic_auth: unknown option "keyz"`},
		"global bad source":      {global("keys redis x"), `civic_auth: keys: want postgres <dsn> or file <path>, got "redis"`},
		"global keys one arg":    {global("keys file"), "wrong argument count or unexpected line ending after 'file'"},
		"global bad environment": {global("environment prod"), `civic_auth: environment: want live or test, got "prod"`},
		"global bad rate":        {global("tier paid lots bills"), `tier paid: rate "lots"`},
		"global duplicate tier":  {global("tier free 2/m"), "civic_auth: tier free given twice"},
		"global bad duration":    {global("cache_ttl soon"), `civic_auth: cache_ttl: want a duration above zero, got "soon"`},
		"global zero duration":   {global("identity_ttl 0s"), `civic_auth: identity_ttl: want a duration above zero, got "0s"`},
		"global tier no rate":    {global("tier paid"), "wrong argument count or unexpected line ending after 'paid'"},
		"global bad cache size":  {global("cache_size -1"), `civic_auth: cache_size: want a positive integer, got "-1"`},
		"global option block":    {global("cache_size 5 {\nx\n}"), "civic_auth: cache_size takes no block"},
		"watch_interval zero":    {global("watch_interval 0s"), `civic_auth: watch_interval: want a duration above zero, got "0s"`},
		"watch_interval word":    {global("watch_interval often"), `civic_auth: watch_interval: want a duration above zero, got "often"`},

		// the flood options (docs/operations.md). Rate refusals are checked up
		// to the option and the value: the reason's wording belongs to the rate
		// parser, not to the Caddyfile reader.
		"failed_lookups no arg":          {global("failed_lookups"), "wrong argument count or unexpected line ending after 'failed_lookups'"},
		"failed_lookups two args":        {global("failed_lookups 20/m 30/m"), "wrong argument count"},
		"failed_lookups not a rate":      {global("failed_lookups lots"), `failed_lookups: rate "lots"`},
		"failed_lookups per week":        {global("failed_lookups 20/w"), `failed_lookups: rate "20/w"`},
		"failed_lookups zero":            {global("failed_lookups 0/m"), `failed_lookups: rate "0/m"`},
		"failed_lookups too many":        {global("failed_lookups 2000000/s"), `failed_lookups: rate "2000000/s"`},
		"negative_cache_size zero":       {global("negative_cache_size 0"), `civic_auth: negative_cache_size: want a positive integer, got "0"`},
		"negative_cache_size word":       {global("negative_cache_size lots"), `civic_auth: negative_cache_size: want a positive integer, got "lots"`},
		"failed_lookup_clients negative": {global("failed_lookup_clients -5"), `civic_auth: failed_lookup_clients: want a positive integer, got "-5"`},

		// tier lines with several rates and a cost budget (docs/design.md D11,
		// D27): the refusal names the tier; the rate's own reason belongs to
		// the parser.
		"tier cost first":        {global("tier paid cost 50000/h bills"), "tier paid: want at least one rate (<quota>/<window>, e.g. 100/m) before cost"},
		"tier same window twice": {global("tier paid 100/m 200/min bills"), `tier paid: rate list "100/m,200/min": two quotas over`},
		"tier five rates":        {global("tier paid 1/s 2/m 3/h 4/d 5/2d"), "tier paid: rate list \"1/s,2/m,3/h,4/d,5/2d\": more than 4 rates"},
		"tier bad second rate":   {global("tier paid 100/m 0/d bills"), `tier paid: rate "0/d"`},
		"tier cost no rate":      {global("tier paid 100/m cost"), "tier paid: cost: want one rate in points per window, e.g. cost 50000/h"},
		"tier cost not a rate":   {global("tier paid 100/m cost bills"), `tier paid: cost: rate "bills"`},
		"tier cost two rates":    {global("tier paid 100/m cost 5/h 6/d bills"), `tier paid: cost takes exactly one rate, got also "6/d"`},
		"tier cost twice":        {global("tier paid 100/m cost 5/h cost 6/h"), "tier paid: cost given twice"},
		"tier cost after family": {global("tier paid 100/m bills cost 5/h"), "tier paid: cost must come after the rates and before the families (no family may be named cost)"},
		"tier rate after family": {global("tier paid 100/m bills 20000/d"), `tier paid: rate "20000/d" after the families: rates come first`},
	}
	for opt, v := range onceOnly {
		configs[opt+" twice"] = adapttest.Refusal{Cfg: global(opt + " " + v + "\n" + opt + " " + v), Msg: "civic_auth: " + opt + " given twice"}
	}
	adapttest.Refused(t, configs)
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt — every once-only option once, tiers with distinct
// names, each flood option's boundary values.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, "{\ncivic_auth {\ntier free 1/m bills\ncache_ttl 1s\n}\n}\n:8080 {\ncivic_auth {\nrequire_family bills\n}\n}")
	opts := "tier paid 2/m bills members\nkeys postgres {env.DATABASE_URL}\nenvironment test"
	for opt, v := range onceOnly {
		if opt != "keys" && opt != "environment" {
			opts += "\n" + opt + " " + v
		}
	}
	adapttest.Adapts(t, global(opts))
	for _, opts := range []string{"tier paid 100/m 20000/d cost 50000/h bills members", "tier paid 1/s,2/m,3/h,4/d cost 1/d",
		"tier paid 100/m costs cost_center", "failed_lookups 20/m", "failed_lookups 1/s", "failed_lookups 1000000/h", "failed_lookups off",
		"negative_cache_size 1", "failed_lookup_clients 65536"} {
		adapttest.Adapts(t, global(opts))
	}
}
