package tooldef

import (
	"os/exec"
	"strings"
	"testing"
)

// The package stays free of Caddy (docs/mcp.md): the Caddy module builds on
// it, not the other way round.
func TestImportsNoCaddy(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		if strings.Contains(dep, "github.com/caddyserver/") {
			t.Errorf("tooldef depends on %s", strings.TrimSpace(dep))
		}
	}
}
