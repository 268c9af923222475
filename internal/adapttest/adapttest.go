// Package adapttest runs the Caddyfile adapter tests every module has: golden
// files (a Caddyfile, a line of dashes, the JSON it must adapt to) and
// configurations the adapter must refuse.
package adapttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// Golden adapts every testdata/caddyfile_adapt/*.caddyfiletest file and
// compares the result with the JSON below its separator.
func Golden(t *testing.T) {
	t.Helper()
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

// Refused checks that each named Caddyfile fails to adapt (an adapter
// error, not merely a different result).
func Refused(t *testing.T, configs map[string]string) {
	t.Helper()
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg+"\n"), nil); err == nil {
				t.Fatal("adapted without error")
			}
		})
	}
}

// Adapts checks that a Caddyfile adapts without error (a control for Refused:
// the same shape with valid values must pass).
func Adapts(t *testing.T, cfg string) {
	t.Helper()
	if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg+"\n"), nil); err != nil {
		t.Fatal(err)
	}
}
