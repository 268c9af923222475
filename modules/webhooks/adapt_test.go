package webhooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

// global puts a civic_webhooks global option block with body before a site.
func global(body string) string {
	return "{\ncivic_webhooks {\n" + body + "\n}\n}\n:8080 {\nrespond ok\n}"
}

// directive puts a civic_webhooks directive with body in a site.
func directive(body string) string { return ":8080 {\ncivic_webhooks {\n" + body + "\n}\n}" }

// Every option but tier with a valid value: the once-only ones.
var (
	globalOnce = map[string]string{
		"database": "x", "secret_key": "k1 k0", "deliver": "off", "workers": "2", "max_in_flight": "2", "max_in_flight_per_org": "1",
		"timeout": "5s", "poll_interval": "1s", "batch": "10", "rotation_overlap": "1h", "retention": "7d", "notice_interval": "30s", "insecure_allow_loopback": "",
		"event_families": "bills members",
	}
	directiveOnce = map[string]string{"prefix": "/v1", "org": "o", "env": "e", "families": "f", "max_replay": "3", "max_endpoints": "2"}
)

func TestCaddyfileErrors(t *testing.T) {
	configs := map[string]adapttest.Refusal{
		"unknown option":       {global("databse x"), `civic_webhooks: unknown option "databse"`},
		"database no arg":      {global("database"), "wrong argument count or unexpected line ending after 'database'"},
		"database two args":    {global("database a b"), "wrong argument count or unexpected line ending after 'b'"},
		"secret_key no arg":    {global("secret_key"), "wrong argument count or unexpected line ending after 'secret_key'"},
		"deliver bad":          {global("deliver maybe"), `civic_webhooks: deliver: want on or off, got "maybe"`},
		"loopback bad":         {global("insecure_allow_loopback yes please"), `civic_webhooks: insecure_allow_loopback "yes": want host:port`},
		"workers zero":         {global("workers 0"), `civic_webhooks: workers: want a positive integer, got "0"`},
		"max_in_flight bad":    {global("max_in_flight lots"), `civic_webhooks: max_in_flight: want a positive integer, got "lots"`},
		"timeout bad":          {global("timeout soon"), `civic_webhooks: timeout: want a duration above zero, got "soon"`},
		"retention zero":       {global("retention 0s"), `civic_webhooks: retention: want a duration above zero, got "0s"`},
		"notice_interval bad":  {global("notice_interval often"), `civic_webhooks: notice_interval: want a duration above zero, got "often"`},
		"option with a block":  {global("workers 2 {\nx\n}"), "civic_webhooks: workers takes no block"},
		"global argument":      {"{\ncivic_webhooks extra {\n}\n}\n:8080 {\nrespond ok\n}", "wrong argument count or unexpected line ending after 'extra'"},
		"global given twice":   {"{\ncivic_webhooks {\ndeliver off\n}\ncivic_webhooks {\ndeliver off\n}\n}\n:8080 {\nrespond ok\n}", "civic_webhooks: global option given twice"},
		"directive argument":   {":8080 {\ncivic_webhooks * extra\n}", "wrong argument count or unexpected line ending after 'extra'"},
		"directive unknown":    {directive("pefix /v1"), `civic_webhooks: unknown option "pefix"`},
		"directive prefix":     {directive("prefix v1"), `civic_webhooks: prefix: "v1" must start with /`},
		"directive max bad":    {directive("max_replay -3"), `civic_webhooks: max_replay: want a positive integer, got "-3"`},
		"directive org noarg":  {directive("org"), "wrong argument count or unexpected line ending after 'org'"},
		"per org zero":         {global("max_in_flight_per_org 0"), `civic_webhooks: max_in_flight_per_org: want a positive integer, got "0"`},
		"tier no rate":         {global("tier free"), "wrong argument count or unexpected line ending after 'free'"},
		"tier bad rate":        {global("tier free fast bills"), `civic_webhooks: tier free: rate "fast"`},
		"tier bad name":        {global("tier Free 30/m bills"), `civic_webhooks: tier "Free": not a tier name`},
		"tier bad family":      {global("tier free 30/m Bills"), `civic_webhooks: tier free: family "Bills" is not a family name`},
		"tier twice":           {global("tier free 30/m bills\ntier free 60/m bills"), "civic_webhooks: tier free given twice"},
		"loopback not host":    {global("insecure_allow_loopback 127.0.0.1"), `civic_webhooks: insecure_allow_loopback: want on, off or host:port pairs, got "127.0.0.1"`},
		"loopback public":      {global("insecure_allow_loopback 8.8.8.8:53"), `insecure_allow_loopback "8.8.8.8:53": the host must be a loopback address or localhost`},
		"loopback private":     {global("insecure_allow_loopback 10.0.0.1:80"), `insecure_allow_loopback "10.0.0.1:80": the host must be a loopback address or localhost`},
		"loopback name":        {global("insecure_allow_loopback example.org:80"), `insecure_allow_loopback "example.org:80": the host must be a loopback address or localhost`},
		"loopback mapped":      {global("insecure_allow_loopback [::ffff:127.0.0.1]:80"), `insecure_allow_loopback "[::ffff:127.0.0.1]:80": the host must be a loopback address or localhost`},
		"loopback port zero":   {global("insecure_allow_loopback 127.0.0.1:0"), `insecure_allow_loopback "127.0.0.1:0": port must be a number from 1 to 65535`},
		"loopback port big":    {global("insecure_allow_loopback 127.0.0.1:65536"), `insecure_allow_loopback "127.0.0.1:65536": port must be a number from 1 to 65535`},
		"loopback on and pair": {global("insecure_allow_loopback on 127.0.0.1:80"), `civic_webhooks: insecure_allow_loopback "on": want host:port`},
	}
	for opt, v := range globalOnce {
		line := strings.TrimSpace(opt + " " + v)
		configs["global "+opt+" twice"] = adapttest.Refusal{Cfg: global(line + "\n" + line), Msg: "civic_webhooks: " + opt + " given twice"}
	}
	for opt, v := range directiveOnce {
		configs["directive "+opt+" twice"] = adapttest.Refusal{Cfg: directive(opt + " " + v + "\n" + opt + " " + v), Msg: "civic_webhooks: " + opt + " given twice"}
	}
	adapttest.Refused(t, configs)
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt — every once-only option once, tiers with distinct
// names.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, "{\ncivic_webhooks {\ndatabase x\nsecret_key k\nworkers 2\ntimeout 5s\ndeliver off\nretention 1h\n"+
		"max_in_flight_per_org 1\ntier free 30/m bills\ntier paid 9/h bills members\ninsecure_allow_loopback 127.0.0.1:80 localhost:9\n}\n}\n"+
		":8080 {\ncivic_webhooks {\nprefix /v1\nmax_replay 3\nmax_endpoints 2\norg o\nenv e\n}\n}")
	var g, h string
	for opt, v := range globalOnce {
		g += strings.TrimSpace(opt+" "+v) + "\n"
	}
	for opt, v := range directiveOnce {
		h += opt + " " + v + "\n"
	}
	adapttest.Adapts(t, "{\ncivic_webhooks {\n"+g+"tier free 30/m bills\ntier paid 9/h bills\n}\n}\n"+directive(h))
	for _, v := range []string{"on", "off", "true", "false"} {
		adapttest.Adapts(t, global("deliver "+v+"\ninsecure_allow_loopback "+v))
	}
	// the shipped tiers.caddy syntax: several rates and a cost budget, read by
	// contract.ParseTierLine like civic_auth reads it
	adapttest.Adapts(t, "{\ncivic_webhooks {\ndatabase x\nsecret_key k\ntier paid 100/m 20000/d cost 50000/h bills members\n}\n}\n:8080 {\nrespond ok\n}")
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"cost without rate": {"{\ncivic_webhooks {\ndatabase x\nsecret_key k\ntier paid 1/m cost bills\n}\n}\n:8080 {\nrespond ok\n}", "civic_webhooks: tier paid: cost: "},
	})
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
		"bad tier in JSON":      {base + `,"tiers":{"free":{"rate":"lots"}}`, `tier free: rate "lots"`},
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
