package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt: a
// Caddyfile, a line of dashes, and the JSON it must adapt to.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/caddyfile_adapt/*.caddyfiletest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			caddyfile, json, ok := strings.Cut(string(data), "----------")
			if !ok {
				t.Fatal("missing ---------- separator")
			}
			if !caddytest.CompareAdapt(t, f, strings.TrimSpace(caddyfile)+"\n", "caddyfile", strings.TrimSpace(json)) {
				t.Fail()
			}
		})
	}
}

func TestCaddyfileErrors(t *testing.T) {
	for name, cfg := range map[string]string{
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
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg+"\n"), nil); err == nil {
				t.Fatal("adapted without error")
			}
		})
	}
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shape with
// valid values must adapt.
func TestCaddyfileValidControl(t *testing.T) {
	cfg := "{\ncivic_auth {\ntier free 1/m bills\ncache_ttl 1s\n}\n}\n:8080 {\ncivic_auth {\nrequire_family bills\n}\n}\n"
	if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil); err != nil {
		t.Fatal(err)
	}
}
