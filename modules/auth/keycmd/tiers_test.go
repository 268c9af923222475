package keycmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shippedCaddyfile is the development Caddyfile make up runs (tiers free,
// paid_beta and enterprise, through `import tiers.caddy`).
func shippedCaddyfile(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "caddyfile", "Caddyfile.local"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runEnv runs the CLI on s with the extra environment env.
func runEnv(s store, env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), s.args(args...), &out, &errb, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "DATABASE_URL" {
			return s.c.dsn
		}
		return ""
	})
	return code, out.String(), errb.String()
}

// TestKeysCLIRefusesUnknownTier: issue, rotate --tier and set-tier refuse a
// tier the gateway's Caddyfile does not define (exit 1, nothing changed) —
// they used to issue it silently, and every request of the key got 403. The
// Caddyfile comes from --caddyfile or CIVICGATE_CADDYFILE; with neither the
// tier is not checked and a warning says so on stderr.
func TestKeysCLIRefusesUnknownTier(t *testing.T) {
	caddyfile := shippedCaddyfile(t)
	const refusal = `tier "gold" is not defined in %s (its tiers: enterprise, free, paid_beta); a key of a tier the gateway does not define is refused with 403 on every request`
	for _, s := range bothStores(t) {
		t.Run(s.name, func(t *testing.T) {
			s.c.t = t
			want := "civicgate keys issue: " + strings.Replace(refusal, "%s", caddyfile, 1) + "\n"
			code, out, errs := runEnv(s, nil, "issue", "--org", "acme", "--tier", "gold", "--env", "live", "--caddyfile", caddyfile)
			if code != 1 || errs != want || keyRE.MatchString(out) {
				t.Fatalf("issue --tier gold: exit %d, out %q, err %q\nwant exit 1 and %q", code, out, errs, want)
			}
			if s.file != "" {
				if _, err := os.Stat(s.file); !os.IsNotExist(err) {
					t.Fatalf("a refused issue wrote the keys file: %v", err)
				}
			} else if l := listJSON(t, s); len(l.Keys) != 0 {
				t.Fatalf("a refused issue left keys: %+v", l.Keys)
			}
			env := map[string]string{CaddyfileEnv: caddyfile}
			if code, _, errs := runEnv(s, env, "issue", "--org", "acme", "--tier", "gold", "--env", "live"); code != 1 ||
				!strings.Contains(errs, `tier "gold" is not defined in `+caddyfile) {
				t.Fatalf("issue --tier gold with %s: exit %d, err %q", CaddyfileEnv, code, errs)
			}

			// A defined tier passes, silently.
			code, out, errs = runEnv(s, env, "issue", "--org", "acme", "--tier", "free", "--env", "live")
			if code != 0 || errs != "" || !keyRE.MatchString(out) {
				t.Fatalf("issue --tier free: exit %d, err %q", code, errs)
			}
			if code, _, errs := runEnv(s, env, "rotate", "--org", "acme", "--env", "live", "--tier", "gold"); code != 1 ||
				!strings.Contains(errs, `civicgate keys rotate: tier "gold" is not defined`) {
				t.Fatalf("rotate --tier gold: exit %d, err %q", code, errs)
			}
			if s.file == "" {
				if code, _, errs := runEnv(s, env, "set-tier", "--org", "acme", "--tier", "gold"); code != 1 ||
					!strings.Contains(errs, `civicgate keys set-tier: tier "gold" is not defined`) {
					t.Fatalf("set-tier --tier gold: exit %d, err %q", code, errs)
				}
			}
			if l := listJSON(t, s); len(l.Keys) != 1 || l.Keys[0].Tier != "free" || l.Keys[0].Status != "active" {
				t.Fatalf("after the refusals: %+v, want the one free key, active", l.Keys)
			}

			// No Caddyfile: the command goes on, with a warning on stderr.
			code, out, errs = runEnv(s, nil, "issue", "--org", "beta", "--tier", "gold", "--env", "live")
			if code != 0 || !keyRE.MatchString(out) ||
				!strings.HasPrefix(errs, `civicgate keys issue: WARNING: tier "gold" NOT CHECKED: no Caddyfile`) ||
				!strings.Contains(errs, "(--caddyfile PATH or CIVICGATE_CADDYFILE)") {
				t.Fatalf("issue with no Caddyfile: exit %d, err %q", code, errs)
			}
		})
	}
}

// TestKeysCLITierSources: what --caddyfile accepts and how it fails.
func TestKeysCLITierSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("plans.caddy", "tier {$CG_TEST_TIER_NAME} 10/m bills\n")
	custom := write("Caddyfile", "{\n\tcivic_auth {\n\t\tkeys file /nowhere\n\t\timport plans.caddy\n\t\ttier basic 5/m bills\n\t}\n}\n:8443 {\n\trespond ok\n}\n")
	t.Setenv("CG_TEST_TIER_NAME", "silver")
	if got, err := gatewayTiers(custom); err != nil || strings.Join(got, ",") != "basic,silver" {
		t.Fatalf("imported and {$VAR} tiers: %v %v, want basic,silver", got, err)
	}
	jsonCfg := write("caddy.json", `{"apps":{"civic_auth":{"tiers":{"gold":{"rates":["1/m"]},"free":{}}}}}`)
	if got, err := gatewayTiers(jsonCfg); err != nil || strings.Join(got, ",") != "free,gold" {
		t.Fatalf("JSON configuration: %v %v, want free,gold", got, err)
	}

	s := store{name: "file", c: cli{t: t}, file: filepath.Join(dir, "keys.json")}
	sidecar, _ := filepath.Abs(filepath.Join("..", "..", "..", "caddyfile", "Caddyfile.webhooks"))
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"missing file", []string{"issue", "--org", "a", "--tier", "free", "--env", "live", "--caddyfile", filepath.Join(dir, "nope")},
			1, "civicgate keys issue: reading the gateway's Caddyfile: open " + filepath.Join(dir, "nope") + ": no such file or directory\n"},
		{"no civic_auth", []string{"issue", "--org", "a", "--tier", "free", "--env", "live", "--caddyfile", sidecar},
			1, "civicgate keys issue: " + sidecar + " defines no civic_auth tier: give the Caddyfile the gateway runs (--caddyfile PATH or CIVICGATE_CADDYFILE)\n"},
		{"not JSON", []string{"issue", "--org", "a", "--tier", "free", "--env", "live", "--caddyfile", write("bad.json", "{")},
			1, "civicgate keys issue: " + filepath.Join(dir, "bad.json") + ": not a JSON configuration\n"},
		{"--caddyfile on list", []string{"list", "--caddyfile", custom}, 2, "--caddyfile is only for issue, rotate and set-tier"},
		{"custom tier", []string{"issue", "--org", "a", "--tier", "silver", "--env", "live", "--caddyfile", custom}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runEnv(s, nil, tc.args...)
			if code != tc.code || (tc.code == 1 && errs != tc.err) || !strings.Contains(errs, tc.err) {
				t.Fatalf("exit %d, err %q; want exit %d and %q", code, errs, tc.code, tc.err)
			}
		})
	}
}
