package gqlguard

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
	for name, body := range map[string]string{
		"extra argument":      "graphql_guard * extra {\n schema /x\n}",
		"unknown option":      "graphql_guard {\n schema /x\n max_depht 3\n}",
		"bad size":            "graphql_guard {\n max_body lots\n}",
		"zero limit":          "graphql_guard {\n max_depth 0\n}",
		"introspection value": "graphql_guard {\n introspection maybe\n}",
		"family without root": "graphql_guard {\n family bills\n}",
		"duplicate family":    "graphql_guard {\n family a x\n family a y\n}",
		"measure_only arg":    "graphql_guard {\n measure_only yes\n}",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := ":8080 {\n" + body + "\nrespond ok\n}\n"
			if caddytest.CompareAdapt(t, name, cfg, "caddyfile", "{}") {
				t.Fatal("adapted without error")
			}
		})
	}
}
