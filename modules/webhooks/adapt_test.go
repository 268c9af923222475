package webhooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/internal/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func TestCaddyfileErrors(t *testing.T) {
	global := func(body string) string { return "{\ncivic_webhooks {\n" + body + "\n}\n}\n:8080 {\nrespond ok\n}" }
	adapttest.Refused(t, map[string]string{
		"unknown option":       global("databse x"),
		"database no arg":      global("database"),
		"database two args":    global("database a b"),
		"secret_key no arg":    global("secret_key"),
		"deliver bad":          global("deliver maybe"),
		"loopback bad":         global("insecure_allow_loopback yes please"),
		"workers zero":         global("workers 0"),
		"max_in_flight bad":    global("max_in_flight lots"),
		"timeout bad":          global("timeout soon"),
		"duplicate option":     global("workers 1\nworkers 2"),
		"global argument":      "{\ncivic_webhooks extra {\n}\n}\n:8080 {\nrespond ok\n}",
		"directive argument":   ":8080 {\ncivic_webhooks * extra\n}",
		"directive unknown":    ":8080 {\ncivic_webhooks {\npefix /v1\n}\n}",
		"directive prefix":     ":8080 {\ncivic_webhooks {\nprefix v1\n}\n}",
		"directive max bad":    ":8080 {\ncivic_webhooks {\nmax_replay -3\n}\n}",
		"directive org noarg":  ":8080 {\ncivic_webhooks {\norg\n}\n}",
		"directive env twice":  ":8080 {\ncivic_webhooks {\nenv a\nenv b\n}\n}",
		"per org zero":         global("max_in_flight_per_org 0"),
		"tier no rate":         global("tier free"),
		"tier bad rate":        global("tier free fast bills"),
		"tier bad name":        global("tier Free 30/m bills"),
		"tier bad family":      global("tier free 30/m Bills"),
		"tier twice":           global("tier free 30/m bills\ntier free 60/m bills"),
		"loopback not host":    global("insecure_allow_loopback 127.0.0.1"),
		"loopback public":      global("insecure_allow_loopback 8.8.8.8:53"),
		"loopback private":     global("insecure_allow_loopback 10.0.0.1:80"),
		"loopback name":        global("insecure_allow_loopback example.org:80"),
		"loopback mapped":      global("insecure_allow_loopback [::ffff:127.0.0.1]:80"),
		"loopback port zero":   global("insecure_allow_loopback 127.0.0.1:0"),
		"loopback port big":    global("insecure_allow_loopback 127.0.0.1:65536"),
		"loopback on and pair": global("insecure_allow_loopback on 127.0.0.1:80"),
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, "{\ncivic_webhooks {\ndatabase x\nsecret_key k\nworkers 2\ntimeout 5s\ndeliver off\nretention 1h\n"+
		"max_in_flight_per_org 1\ntier free 30/m bills\ntier paid 9/h bills members\ninsecure_allow_loopback 127.0.0.1:80 localhost:9\n}\n}\n"+
		":8080 {\ncivic_webhooks {\nprefix /v1\nmax_replay 3\nmax_endpoints 2\norg o\nenv e\n}\n}")
}

// TestProvisionRefusals: configurations that adapt but must not run — a
// delivering app without tiers (fail closed), a per-organization bound not
// below the workers, a loopback allowlist naming Caddy's admin endpoint —
// are refused with a message that says what to change; the controls
// provision.
func TestProvisionRefusals(t *testing.T) {
	const base = `"database":"postgres://u@127.0.0.1:1/x","secret_keys":["0123456789abcdef0123456789abcdef"]`
	const tiers = `"tiers":{"free":{"rate":"30/m","families":["bills","members"]}}`
	dflt, err := caddy.ParseNetworkAddress(caddy.DefaultAdminListen)
	if err != nil {
		t.Fatal(err)
	}
	validate := func(app string) error {
		var cfg caddy.Config
		if err := json.Unmarshal([]byte(`{"admin":{"disabled":true},"apps":{"civic_webhooks":{`+app+`}}}`), &cfg); err != nil {
			t.Fatal(err)
		}
		return caddy.Validate(&cfg)
	}
	for name, tc := range map[string]struct{ app, want string }{
		"deliver without tiers": {base, "deliver is on but no tier is configured, so no organization would be entitled to any delivery: " +
			"add the same `tier <name> <rate> <families...>` lines as civic_auth inside civic_webhooks (`import tiers.caddy` in the shipped Caddyfiles), or set `deliver off`"},
		"per org at workers":    {base + `,` + tiers + `,"workers":4,"max_in_flight_per_org":4`, "max_in_flight_per_org 4 must be below workers 4"},
		"per org default ok":    {base + `,` + tiers + `,"workers":1`, ""},
		"bad tier in JSON":      {base + `,"tiers":{"free":{"rate":"lots"}}`, `tier free: rate "lots" is not like 100/m`},
		"loopback both forms":   {base + `,` + tiers + `,"insecure_allow_loopback":true,"insecure_allow_loopback_targets":["127.0.0.1:9"]`, "either on or a list"},
		"loopback admin":        {base + `,` + tiers + fmt.Sprintf(`,"insecure_allow_loopback_targets":["localhost:%d"]`, dflt.StartPort), "is Caddy's admin endpoint"},
		"loopback public":       {base + `,` + tiers + `,"insecure_allow_loopback_targets":["1.1.1.1:80"]`, "must be a loopback address"},
		"api-only, no tiers":    {base + `,"deliver":false`, ""},
		"delivering with tiers": {base + `,` + tiers + `,"insecure_allow_loopback_targets":["127.0.0.1:9999"]`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := validate(tc.app)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
		})
	}
}
