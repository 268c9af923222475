package contract_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile" // the Caddyfile adapter
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/civicgate/civicgate/modules/auth"
	"github.com/civicgate/civicgate/modules/contract"
	_ "github.com/civicgate/civicgate/modules/ratelimit"
	_ "github.com/civicgate/civicgate/modules/webhooks"
)

// TestRateParity: a rate is accepted or refused alike by every reader of the
// one rate syntax — civic_auth's tier lines and failed_lookups,
// civic_rate_limit's rate, civic_webhooks' tier lines (which import the same
// tiers.caddy) and contract.ParseRate itself — through the real Caddyfile
// adapter and, for the gateway's handlers, provisioning. A tier whose rate
// civic_auth accepts and publishes as {civic.rate} is one civic_rate_limit
// can enforce: 100/d was refused by civic_auth and accepted by
// civic_rate_limit before the syntax was one.
func TestRateParity(t *testing.T) {
	readers := map[string]func(rate string) string{
		"civic_auth tier": func(r string) string {
			return authGlobal("tier t "+r+" bills") + ":0 {\ncivic_auth\nrespond ok\n}\n"
		},
		"civic_auth failed_lookups": func(r string) string {
			return authGlobal("tier t 1/m bills\nfailed_lookups "+r) + ":0 {\ncivic_auth\nrespond ok\n}\n"
		},
		"civic_rate_limit rate": func(r string) string {
			return ":0 {\ncivic_rate_limit {\nkey {remote_host}\nrate " + r + "\n}\nrespond ok\n}\n"
		},
		"civic_webhooks tier": func(r string) string { // adapted only: the app needs PostgreSQL to provision
			return "{\ncivic_webhooks {\ntier t " + r + " bills\n}\n}\n:0 {\nrespond ok\n}\n"
		},
	}
	for _, tc := range []struct {
		rate string
		ok   bool
	}{
		{"100/d", true}, {"7/day", true}, {"100/m", true}, {"60/min", true}, {"10/s", true}, {"1000/h", true},
		{"5/2s", true}, {"90/1m30s", true}, {"1/1ms", true}, {"1000000/s", true}, {"1000000000/h", true},
		{"0/m", false}, {"-1/s", false}, {"100", false}, {"lots", false}, {"10/fortnight", false}, {"1.5/s", false},
		{"1/1ns", false}, {"10/0s", false}, {"2000000/ms", false}, {"1000000000/s", false}, {"1000000001/d", false},
	} {
		_, err := contract.ParseRate(tc.rate)
		if (err == nil) != tc.ok {
			t.Errorf("contract.ParseRate(%q): %v, want accepted=%v", tc.rate, err, tc.ok)
		}
		for name, cfg := range readers {
			err := adaptAndValidate(cfg(tc.rate), name != "civic_webhooks tier")
			if (err == nil) != tc.ok {
				t.Errorf("%s %q: %v, want accepted=%v (as contract.ParseRate)", name, tc.rate, err, tc.ok)
			}
		}
	}
}

// authGlobal is a civic_auth global option that provisions without a
// database (pgx connects lazily) with opts added.
func authGlobal(opts string) string {
	return "{\ncivic_auth {\nkeys postgres postgres://civic@127.0.0.1:1/none\nenvironment live\n" +
		"identity_secret 0123456789abcdef0123456789abcdef\n" + opts + "\n}\n}\n"
}

// adaptAndValidate adapts a Caddyfile and, with provision, provisions the
// result as `caddy validate` does.
func adaptAndValidate(caddyfile string, provision bool) error {
	cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil || !provision {
		return err
	}
	var cfg caddy.Config
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return fmt.Errorf("adapted config: %w", err)
	}
	return caddy.Validate(&cfg)
}
