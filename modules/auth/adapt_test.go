package auth

import (
	"testing"

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
