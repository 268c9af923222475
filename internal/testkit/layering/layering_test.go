package layering

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	module   = "github.com/civicgate/civicgate"
	modules  = module + "/modules/"
	contract = module + "/modules/contract"
	backend  = module + "/backend"
)

// edge is one import: pkg imports imp.
type edge struct{ pkg, imp string }

// imports lists every import edge (each once) of the packages patterns
// depend on, their tests' too with withTests: `go list -deps` run from the
// module root.
func imports(t *testing.T, withTests bool, patterns ...string) []edge {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	args := []string{"list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}
	if withTests {
		args = append(args, "-test")
	}
	cmd := exec.Command(goBin, append(args, patterns...)...)
	cmd.Dir = filepath.Join("..", "..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, stderr.String())
	}
	var edges []edge
	seen := map[edge]bool{} // a package and its test variant list the same imports
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := f[0]
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "[") { // the test variant's suffix: "pkg [pkg.test]"
				continue
			}
			if e := (edge{pkg, imp}); !seen[e] {
				seen[e] = true
				edges = append(edges, e)
			}
		}
	}
	if len(edges) == 0 {
		t.Fatalf("go list %v listed no imports", patterns)
	}
	return edges
}

// TestBackendImportsOnlyContract: recordsd and every backend package, tests
// included, reach modules/ only through modules/contract.
func TestBackendImportsOnlyContract(t *testing.T) {
	sawContract := false
	for _, e := range imports(t, true, "./backend/...", "./cmd/recordsd") {
		switch {
		case e.imp == contract:
			sawContract = true
		case strings.HasPrefix(e.imp, modules):
			t.Errorf("%s imports %s: the records service may import modules/contract only", e.pkg, e.imp)
		}
	}
	if !sawContract {
		t.Error("nothing in backend/ imports modules/contract: the identity assertion is verified elsewhere?")
	}
}

// TestModulesNeverImportBackend: no module, and no module's test, imports
// backend/: the gateway works in front of any backend.
func TestModulesNeverImportBackend(t *testing.T) {
	for _, e := range imports(t, true, "./modules/...", "./cmd/civicgate") {
		if e.imp == backend || strings.HasPrefix(e.imp, backend+"/") {
			t.Errorf("%s imports %s: modules/ must not import backend/", e.pkg, e.imp)
		}
	}
}

// TestContractStandsAlone: modules/contract imports the standard library and
// golang-jwt only — no Caddy, no other package of the repository — so any
// upstream can import it.
func TestContractStandsAlone(t *testing.T) {
	allowed := []string{"github.com/golang-jwt/jwt/v5"}
	for _, e := range imports(t, false, "./modules/contract") {
		if e.pkg != contract {
			continue
		}
		if first, _, _ := strings.Cut(e.imp, "/"); strings.Contains(first, ".") && !slices.Contains(allowed, e.imp) {
			t.Errorf("modules/contract imports %s; it may import the standard library and %v only", e.imp, allowed)
		}
	}
}
