package webhooks

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
	global := func(body string) string { return "{\ncivic_webhooks {\n" + body + "\n}\n}\n:8080 {\nrespond ok\n}" }
	for name, cfg := range map[string]string{
		"unknown option":      global("databse x"),
		"database no arg":     global("database"),
		"database two args":   global("database a b"),
		"secret_key no arg":   global("secret_key"),
		"deliver bad":         global("deliver maybe"),
		"loopback bad":        global("insecure_allow_loopback yes please"),
		"workers zero":        global("workers 0"),
		"max_in_flight bad":   global("max_in_flight lots"),
		"timeout bad":         global("timeout soon"),
		"duplicate option":    global("workers 1\nworkers 2"),
		"global argument":     "{\ncivic_webhooks extra {\n}\n}\n:8080 {\nrespond ok\n}",
		"directive argument":  ":8080 {\ncivic_webhooks * extra\n}",
		"directive unknown":   ":8080 {\ncivic_webhooks {\npefix /v1\n}\n}",
		"directive prefix":    ":8080 {\ncivic_webhooks {\nprefix v1\n}\n}",
		"directive max bad":   ":8080 {\ncivic_webhooks {\nmax_replay -3\n}\n}",
		"directive org noarg": ":8080 {\ncivic_webhooks {\norg\n}\n}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg+"\n"), nil); err == nil {
				t.Fatal("adapted without error")
			}
		})
	}
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	cfg := "{\ncivic_webhooks {\ndatabase x\nsecret_key k\nworkers 2\ntimeout 5s\ndeliver off\n}\n}\n:8080 {\ncivic_webhooks {\nprefix /v1\nmax_replay 3\norg o\n}\n}\n"
	if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg), nil); err != nil {
		t.Fatal(err)
	}
}
