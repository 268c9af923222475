package layering

import (
	"fmt"
	"strings"
	"testing"
)

// moduleLevels places every package of modules/ (path below modules/; "X/..."
// is every package under X) on a level: a package imports packages of lower
// levels, and of its own level only within its own module (the first
// element of the path: auth, console, webhooks …). So a store never
// imports the commands and handlers built on it, and nothing imports the
// console, which sits on top of everything (docs/design.md D60). A new
// package must be placed here before this test passes.
var moduleLevels = [][]string{
	// 0: what the modules and the upstream exchange.
	{"contract"},
	// 1: stores and libraries: the tables' owners and what handlers compute
	// with, no Caddy module among them.
	{"auth/keystore", "auth/keystore/oldledger", "auth/accesstoken", "auth/denyable", "ratelimit/usage", "webhooks/store", "webhooks/secretbox",
		"webhooks/signature", "webhooks/egress", "gqlguard/...", "usageexport/export"},
	// 2: the Caddy modules (apps, handlers, encoders) and the commands.
	{"auth", "auth/keycmd", "ratelimit", "ratelimit/usagecmd", "ratelimit/usageadmin", "gqlguard", "gqlcache", "mcp", "mcp/...", "tracing", "logredact",
		"webhooks", "webhooks/...", "usageexport", "usageexport/..."},
	// 3: the organization console, over the key store, usage and webhooks.
	{"console", "console/..."},
}

// levelOf is the level of a package given by its path below modules/, or
// -1 when moduleLevels does not place it. An exact entry wins over a "/..."
// one, and a longer "/..." entry over a shorter.
func levelOf(rel string) int {
	level, best := -1, -1
	for l, pkgs := range moduleLevels {
		for _, p := range pkgs {
			if p == rel {
				return l
			}
			if prefix, ok := strings.CutSuffix(p, "/..."); ok && strings.HasPrefix(rel, prefix+"/") && len(prefix) > best {
				level, best = l, len(prefix)
			}
		}
	}
	return level
}

// levelViolations lists the edges between packages of modules/ that go up or
// sideways into another module, and the packages moduleLevels does not place.
func levelViolations(edges []edge) []string {
	var out []string
	unplaced := map[string]bool{}
	for _, e := range edges {
		from, okFrom := strings.CutPrefix(e.pkg, modules)
		to, okTo := strings.CutPrefix(e.imp, modules)
		if !okFrom || !okTo {
			continue
		}
		lf, lt := levelOf(from), levelOf(to)
		for _, p := range []string{from, to} {
			if levelOf(p) < 0 && !unplaced[p] {
				unplaced[p] = true
				out = append(out, fmt.Sprintf("modules/%s has no level in moduleLevels: place it", p))
			}
		}
		if lf < 0 || lt < 0 {
			continue
		}
		sameModule := moduleOf(from) == moduleOf(to)
		if lt > lf || (lt == lf && !sameModule) {
			out = append(out, fmt.Sprintf("modules/%s (level %d) imports modules/%s (level %d): a package imports lower levels, or its own level within its own module only",
				from, lf, to, lt))
		}
	}
	return out
}

func moduleOf(rel string) string {
	first, _, _ := strings.Cut(rel, "/")
	return first
}

// TestModulesImportDownward: no package of modules/ imports a package of
// modules/ above it in moduleLevels. Tests are left out: a test may assemble
// a whole gateway from modules of every level (the mcp tests serve the
// console beside the records API).
func TestModulesImportDownward(t *testing.T) {
	for _, v := range levelViolations(imports(t, false, "./modules/...")) {
		t.Error(v)
	}
}

// TestLevelRuleRefusesUpwardImports: the rule refuses the imports it is for —
// a command importing the console's store, a store importing a handler, a
// package importing another module's package of its own level — and allows
// the ones the tree makes.
func TestLevelRuleRefusesUpwardImports(t *testing.T) {
	e := func(from, to string) edge { return edge{modules + from, modules + to} }
	for _, bad := range []edge{
		e("auth/keycmd", "console/consolestore"),
		e("auth/keystore", "auth"),
		e("ratelimit/usage", "auth/keystore"),
		e("contract", "auth/keystore"),
	} {
		if len(levelViolations([]edge{bad})) == 0 {
			t.Errorf("%s → %s was allowed", bad.pkg, bad.imp)
		}
	}
	for _, good := range []edge{
		e("auth/keycmd", "auth/keystore"),
		e("console/consolestore", "auth/keystore"),
		e("console", "console/consolestore"),
		e("webhooks/store", "webhooks/secretbox"),
	} {
		if v := levelViolations([]edge{good}); len(v) != 0 {
			t.Errorf("%s → %s was refused: %v", good.pkg, good.imp, v)
		}
	}
	if v := levelViolations([]edge{e("newthing", "contract")}); len(v) != 1 || !strings.Contains(v[0], "no level") {
		t.Errorf("an unplaced package: %v", v)
	}
}
