package accesstoken

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoCaddy: the package and everything it imports (tests aside)
// stays free of Caddy, zap and Prometheus, so it can be used and tested
// without them (docs/design.md D46).
func TestImportsNoCaddy(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/caddyserver/", "go.uber.org/zap", "github.com/prometheus/"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("imports %s", dep)
			}
		}
	}
}
