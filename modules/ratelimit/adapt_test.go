package ratelimit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		"handler argument":   ":8080 {\ncivic_rate_limit 10/s\n}\n",
		"handler unknown":    ":8080 {\ncivic_rate_limit {\nburst 3\n}\n}\n",
		"handler duplicate":  ":8080 {\ncivic_rate_limit {\nkey a\nkey b\n}\n}\n",
		"handler two values": ":8080 {\ncivic_rate_limit {\nrate 1/s 2/s\n}\n}\n",
		"global unknown":     "{\ncivic_rate_limit {\nredis_url x\n}\n}\n:8080 {\nrespond ok\n}\n",
		"global lease":       "{\ncivic_rate_limit {\nlease lots\n}\n}\n:8080 {\nrespond ok\n}\n",
		"global timeout":     "{\ncivic_rate_limit {\ntimeout soon\n}\n}\n:8080 {\nrespond ok\n}\n",
		"global max_keys":    "{\ncivic_rate_limit {\nmax_keys 0\n}\n}\n:8080 {\nrespond ok\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if caddytest.CompareAdapt(t, name, cfg, "caddyfile", "{}") {
				t.Fatal("adapted without error")
			}
		})
	}
}
