package auth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestKeyFileStore runs the gateway on a hashed keys file (no PostgreSQL).
func TestKeyFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	live, err := keystore.IssueToFile(path, "acme", "free", "live")
	if err != nil {
		t.Fatal(err)
	}
	test, err := keystore.IssueToFile(path, "acme", "free", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	t.Setenv("CIVIC_AUTH_TEST_KEYS", path)
	port := testenv.FreePort(t)
	cfg := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	civic_auth {
		keys file {env.CIVIC_AUTH_TEST_KEYS}
		environment live
		identity_secret {env.CIVIC_AUTH_TEST_SECRET}
		tier free 30/m bills members
	}
}
http://localhost:%d {
	route /changes {
		civic_auth {
			require_family changes
		}
		respond "no"
	}
	route {
		civic_auth
		respond "{civic.key_id}|{civic.org}|{civic.tier}|{civic.rate}|{civic.families}"
	}
}
`, adminPort, port, testenv.FreePort(t), port)
	caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")
	base := fmt.Sprintf("http://localhost:%d", port)

	got := get(t, base+"/", "Authorization", "Bearer "+live.Key)
	if want := live.ID + "|" + live.OrgID + "|free|30/m|bills,members"; got.status != 200 || got.body != want {
		t.Fatalf("got %d %q, want %q", got.status, got.body, want)
	}
	expectRefusal(t, get(t, base+"/", "Authorization", "Bearer "+test.Key), 401, `{"error":"API key not valid in this environment"}`)
	expectRefusal(t, get(t, base+"/changes", "Authorization", "Bearer "+live.Key), 403, `{"error":"Tier not entitled to this endpoint family"}`)
	other, err := keystore.NewKey("live")
	if err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, get(t, base+"/", "Authorization", "Bearer "+other), 401, `{"error":"Invalid API key"}`)
}

// TestProvisionRefusesBadConfig: the app must not start without a real
// secret, a known environment, tiers and a usable store.
func TestProvisionRefusesBadConfig(t *testing.T) {
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	t.Setenv("CIVIC_AUTH_SHORT_SECRET", "short")
	emptyKeys := writeFile(t, `{"keys":[]}`)
	good := func() *App {
		return &App{
			Keys:           KeysConfig{Source: "file", File: emptyKeys},
			Environment:    "live",
			IdentitySecret: "{env.CIVIC_AUTH_TEST_SECRET}",
			Tiers:          map[string]TierConfig{"free": {Rate: "30/m", Families: []string{"bills"}}},
		}
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := good().Provision(ctx); err != nil {
		t.Fatalf("control config refused: %v", err)
	}
	several := good()
	several.Tiers["paid"] = TierConfig{Rate: "100/m 20000/d", CostBudget: "50000/h", Families: []string{"bills"}}
	if err := several.Provision(ctx); err != nil {
		t.Fatalf("control config with several rates and a cost budget refused: %v", err)
	}
	for name, mutate := range map[string]func(*App){
		"short secret":  func(a *App) { a.IdentitySecret = "{env.CIVIC_AUTH_SHORT_SECRET}" },
		"unset secret":  func(a *App) { a.IdentitySecret = "{env.CIVIC_AUTH_UNSET_SECRET}" },
		"environment":   func(a *App) { a.Environment = "prod" },
		"no tiers":      func(a *App) { a.Tiers = nil },
		"bad rate":      func(a *App) { a.Tiers["free"] = TierConfig{Rate: "fast"} },
		"bad family":    func(a *App) { a.Tiers["free"] = TierConfig{Rate: "1/m", Families: []string{"Bills!"}} },
		"rate list":     func(a *App) { a.Tiers["free"] = TierConfig{Rate: "1/m,2/min"} },
		"bad cost":      func(a *App) { a.Tiers["free"] = TierConfig{Rate: "1/m", CostBudget: "cheap"} },
		"family cost":   func(a *App) { a.Tiers["free"] = TierConfig{Rate: "1/m", Families: []string{"cost"}} },
		"identity ttl":  func(a *App) { a.IdentityTTL = caddy.Duration(2 * time.Minute) },
		"source":        func(a *App) { a.Keys.Source = "ldap" },
		"empty dsn":     func(a *App) { a.Keys = KeysConfig{Source: "postgres", DSN: "{env.CIVIC_AUTH_UNSET_DSN}"} },
		"bad keys file": func(a *App) { a.Keys.File = writeFile(t, `{"keys":[{"id":"k","sha256":"zz"}]}`) },
		// A missing or unreadable keys file used to be an empty store: every
		// key got 401 and nothing was logged (docs/design.md D8: checked
		// strictly at provision).
		"missing keys file":     func(a *App) { a.Keys.File = filepath.Join(t.TempDir(), "none.json") },
		"keys file a directory": func(a *App) { a.Keys.File = t.TempDir() },
		"empty keys file":       func(a *App) { a.Keys.File = writeFile(t, ``) },
		"truncated keys file":   func(a *App) { a.Keys.File = writeFile(t, `{"keys":[`) },
		"unset keys file":       func(a *App) { a.Keys.File = "{env.CIVIC_AUTH_UNSET_KEYS}" },
		"failed lookups":        func(a *App) { a.FailedLookups = "lots" },
	} {
		t.Run(name, func(t *testing.T) {
			a := good()
			mutate(a)
			if err := a.Provision(ctx); err == nil {
				t.Fatal("provisioned")
			}
		})
	}
}

func writeFile(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
