// Package adapttest runs the Caddyfile adapter tests every module has: golden
// files (a Caddyfile, a line of dashes, the JSON it must adapt to) and
// configurations the adapter must refuse, each with the message it must give.
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

// Refusal is a Caddyfile the adapter must refuse, and a part of the message
// it must refuse it with (e.g. "graphql_guard: max_depth given twice"):
// {Cfg: the Caddyfile, Msg: a substring of the adapter's error}. An alias of
// an unnamed struct, so that tables may write {cfg, msg}.
type Refusal = struct{ Cfg, Msg string }

// Refused checks that each named Caddyfile fails to adapt with an error
// containing its Msg — not merely any error, which a typo in the test
// Caddyfile would produce as well. Pair it with Adapts on the same shapes
// with valid values.
func Refused(t *testing.T, configs map[string]Refusal) {
	t.Helper()
	for name, c := range configs {
		t.Run(name, func(t *testing.T) {
			if c.Msg == "" {
				t.Fatal("no expected message: set Refusal.Msg")
			}
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(c.Cfg+"\n"), nil)
			if err == nil {
				t.Fatalf("adapted without error, want an error containing %q", c.Msg)
			}
			if !strings.Contains(err.Error(), c.Msg) {
				t.Fatalf("error %q, want one containing %q", err, c.Msg)
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
