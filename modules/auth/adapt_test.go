package auth

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/civicgate/civicgate/internal/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]string{
		"directive argument":    ":8080 {\ncivic_auth * extra\n}",
		"directive unknown":     ":8080 {\ncivic_auth {\nrequire_famly bills\n}\n}",
		"require_family no arg": ":8080 {\ncivic_auth {\nrequire_family\n}\n}",
		"global unknown option": "{\ncivic_auth {\nkeyz file x\n}\n}\n:8080 {\nrespond ok\n}",
		"global bad source":     "{\ncivic_auth {\nkeys redis x\n}\n}\n:8080 {\nrespond ok\n}",
		"global bad rate":       "{\ncivic_auth {\ntier free lots bills\n}\n}\n:8080 {\nrespond ok\n}",
		"global duplicate tier": "{\ncivic_auth {\ntier free 1/m\ntier free 2/m\n}\n}\n:8080 {\nrespond ok\n}",
		"global bad duration":   "{\ncivic_auth {\ncache_ttl soon\n}\n}\n:8080 {\nrespond ok\n}",
		"global tier no rate":   "{\ncivic_auth {\ntier free\n}\n}\n:8080 {\nrespond ok\n}",
		"global bad cache size": "{\ncivic_auth {\ncache_size -1\n}\n}\n:8080 {\nrespond ok\n}",
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shape with
// valid values must adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, "{\ncivic_auth {\ntier free 1/m bills\ncache_ttl 1s\n}\n}\n:8080 {\ncivic_auth {\nrequire_family bills\n}\n}")
}

// global wraps civic_auth options in a global option block with a site.
func global(opts string) string {
	return "{\ncivic_auth {\ntier free 1/m bills\n" + opts + "\n}\n}\n:8080 {\ncivic_auth\n}"
}

// TestCaddyfileFloodOptionErrors: the flood options' refusals, messages
// checked.
func TestCaddyfileFloodOptionErrors(t *testing.T) {
	for name, c := range map[string]struct{ cfg, msg string }{
		"failed_lookups no arg":          {global("failed_lookups"), "wrong argument count or unexpected line ending after 'failed_lookups'"},
		"failed_lookups two args":        {global("failed_lookups 20/m 30/m"), "wrong argument count"},
		"failed_lookups not a rate":      {global("failed_lookups lots"), `failed_lookups: rate "lots" is not like 100/m; want N/s, N/m, N/h or off`},
		"failed_lookups per day":         {global("failed_lookups 20/d"), `rate "20/d" is not like 100/m`},
		"failed_lookups zero":            {global("failed_lookups 0/m"), `rate "0/m" is not like 100/m`},
		"failed_lookups too many":        {global("failed_lookups 2000000/s"), `rate "2000000/s": count out of range`},
		"negative_cache_size zero":       {global("negative_cache_size 0"), `negative_cache_size: want a positive integer, got "0"`},
		"negative_cache_size word":       {global("negative_cache_size lots"), `negative_cache_size: want a positive integer, got "lots"`},
		"failed_lookup_clients negative": {global("failed_lookup_clients -5"), `failed_lookup_clients: want a positive integer, got "-5"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(c.cfg+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want one containing %q", err, c.msg)
			}
		})
	}
}

// TestCaddyfileFloodOptionsValidControl guards TestCaddyfileFloodOptionErrors.
func TestCaddyfileFloodOptionsValidControl(t *testing.T) {
	for _, opts := range []string{"failed_lookups 20/m", "failed_lookups 1/s", "failed_lookups 1000000/h", "failed_lookups off",
		"negative_cache_size 1", "failed_lookup_clients 65536"} {
		adapttest.Adapts(t, global(opts))
	}
}
