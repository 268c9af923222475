package layering

import (
	"strings"
	"testing"
)

const gqlguard = modules + "gqlguard"

// gqlguardSteps are graphql_guard's pipeline packages (modules/gqlguard
// README "Layout"): request → document → analysis → variables, and the
// test reference under internal/ (the raw-JSON reader they use is the
// repository's internal/rawjson).
var gqlguardSteps = []string{
	gqlguard + "/request",
	gqlguard + "/document",
	gqlguard + "/analysis",
	gqlguard + "/variables",
	gqlguard + "/internal/...",
}

// hostImports are what only the Caddy-facing side of the guard may import:
// Caddy, zap, Prometheus and OpenTelemetry.
var hostImports = []string{"github.com/caddyserver/", "go.uber.org/zap", "github.com/prometheus/", "go.opentelemetry.io/"}

func isHostImport(imp string) bool {
	for _, p := range hostImports {
		if strings.HasPrefix(imp, p) {
			return true
		}
	}
	return false
}

// TestGuardStepsImportNoHost: the guard's pipeline packages, their tests
// and everything they depend on import nothing from Caddy, zap, Prometheus
// or OpenTelemetry, and nothing of modules/gqlguard outside the pipeline
// (the shell, persisted, subscribe/…): the analysis runs, and is tested,
// without a server.
func TestGuardStepsImportNoHost(t *testing.T) {
	patterns := make([]string, len(gqlguardSteps))
	for i, p := range gqlguardSteps {
		patterns[i] = "./" + strings.TrimPrefix(p, module+"/")
	}
	for _, e := range imports(t, true, patterns...) {
		if isHostImport(e.imp) {
			t.Errorf("%s imports %s: graphql_guard's pipeline steps must not depend on Caddy, zap, Prometheus or OpenTelemetry", e.pkg, e.imp)
		}
		if (e.imp == gqlguard || strings.HasPrefix(e.imp, gqlguard+"/")) && !isGuardStep(e.imp) {
			t.Errorf("%s imports %s: a pipeline step must not import the guard's shell, persisted or subscribe/…", e.pkg, e.imp)
		}
	}
}

// TestGuardShellOwnsHostImports: under modules/gqlguard, only the shell
// (the Caddy handler) and its Caddy-facing helpers persisted, subscribe
// (the subscription shell) and subscribe/wsproxy import Caddy, zap,
// Prometheus or OpenTelemetry (subscribe/subhub and subscribe/subslots do
// not).
func TestGuardShellOwnsHostImports(t *testing.T) {
	allowed := map[string]bool{gqlguard: true, gqlguard + "/persisted": true, gqlguard + "/subscribe": true,
		gqlguard + "/subscribe/wsproxy": true}
	sawShell := false
	for _, e := range imports(t, false, "./modules/gqlguard/...") {
		if e.pkg != gqlguard && !strings.HasPrefix(e.pkg, gqlguard+"/") || !isHostImport(e.imp) {
			continue
		}
		if e.pkg == gqlguard {
			sawShell = true
		}
		if !allowed[e.pkg] {
			t.Errorf("%s imports %s: only the graphql_guard shell, persisted, subscribe and subscribe/wsproxy may", e.pkg, e.imp)
		}
	}
	if !sawShell {
		t.Error("modules/gqlguard imports no Caddy package: is the handler still there?")
	}
}

func isGuardStep(pkg string) bool {
	for _, s := range gqlguardSteps {
		if pkg == s || strings.HasSuffix(s, "/...") && strings.HasPrefix(pkg, strings.TrimSuffix(s, "...")) {
			return true
		}
	}
	return false
}

// TestGuardTopFolderIsRequestShell: the guard's top folder holds only the
// request pipeline's shell, HTTP in → pipeline → next (modules/gqlguard
// README "Layout"; docs/design.md D61): it reaches the subscription side
// only through package subscribe and its one interface, never the packages
// beneath it, and subscribe never imports the guard back.
func TestGuardTopFolderIsRequestShell(t *testing.T) {
	const sub = gqlguard + "/subscribe"
	sawSubscribe := false
	for _, e := range imports(t, false, "./modules/gqlguard/...") {
		switch {
		case e.pkg == gqlguard && e.imp == sub:
			sawSubscribe = true
		case e.pkg == gqlguard && strings.HasPrefix(e.imp, sub+"/"):
			t.Errorf("%s imports %s: the guard reaches the subscription side only through %s", e.pkg, e.imp, sub)
		case (e.pkg == sub || strings.HasPrefix(e.pkg, sub+"/")) && e.imp == gqlguard:
			t.Errorf("%s imports %s: the subscription shell sees the guard only as subscribe.Pipeline", e.pkg, e.imp)
		}
	}
	if !sawSubscribe {
		t.Errorf("%s does not import %s: where is the subscription shell?", gqlguard, sub)
	}
}
