package layering

import (
	"path"
	"strings"
	"testing"
)

const testkit = module + "/internal/testkit/"

// harness reports whether pkg is a test harness: a package under
// internal/testkit, or a package of its own tree named like the standard
// library's net/http/httptest (…test) that serves that tree's tests.
func harness(pkg string) bool {
	return strings.HasPrefix(pkg, testkit) || (strings.HasPrefix(pkg, module+"/") && strings.HasSuffix(path.Base(pkg), "test"))
}

// TestNothingShippedImportsTestHarnesses: the test harnesses (internal/testkit:
// databases, Redis, processes, browsers, identity providers) are imported by
// tests and by other harnesses only. No non-test file of the product imports
// one, so nothing built into civicgate or recordsd carries them.
func TestNothingShippedImportsTestHarnesses(t *testing.T) {
	for _, e := range imports(t, false, "./...") {
		if harness(e.imp) && !harness(e.pkg) && strings.HasPrefix(e.pkg, module+"/") {
			t.Errorf("%s imports %s: a test harness may be imported by tests and other harnesses only", e.pkg, e.imp)
		}
	}
	for _, e := range imports(t, false, "./cmd/...") {
		if harness(e.pkg) {
			t.Errorf("a binary under cmd/ depends on the test harness %s", e.pkg)
		}
	}
}
