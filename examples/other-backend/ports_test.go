package otherbackend

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The example's addresses, as README.md's "Running it by hand" gives them.
const (
	readmeLibrarydAddr = "127.0.0.1:4000"
	readmeGatewayAddr  = "127.0.0.1:4080"
	exampleAdminAddr   = "localhost:4019"
)

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

// TestExamplePortsAreNotMakeUps: the example's default ports (libraryd, the gateway's site and admin endpoint)
// are none of those `make up` takes — read from caddyfile/Caddyfile.local and scripts/up.sh — so the example
// runs beside the stack; and the README, the Caddyfile and libraryd agree on them.
func TestExamplePortsAreNotMakeUps(t *testing.T) {
	makeUp := map[string]string{}
	for _, m := range regexp.MustCompile(`\{\$(CIVICGATE_[A-Z_]+):(?:localhost:)?(\d+)\}`).FindAllStringSubmatch(readRepoFile(t, "caddyfile/Caddyfile.local"), -1) {
		makeUp[m[2]] = "caddyfile/Caddyfile.local " + m[1]
	}
	for _, m := range regexp.MustCompile(`([A-Z_]+)=[a-z]*:?/*[^\s:]*:(\d+)`).FindAllStringSubmatch(readRepoFile(t, "scripts/up.sh"), -1) {
		makeUp[m[2]] = "scripts/up.sh " + m[1]
	}
	for _, p := range []string{"8080", "8443", "2019", "8081"} {
		if makeUp[p] == "" {
			t.Fatalf("make up's port %s not found in its files (found %v): this test no longer reads them right", p, makeUp)
		}
	}

	caddyfile := readRepoFile(t, "examples/other-backend/Caddyfile")
	admin := regexp.MustCompile(`admin \{\$CIVICGATE_ADMIN:([^}]+)\}`).FindStringSubmatch(caddyfile)
	if admin == nil || admin[1] != exampleAdminAddr {
		t.Errorf("Caddyfile admin default %v, want %s", admin, exampleAdminAddr)
	}
	listen := regexp.MustCompile(`defaultListen = "([^"]+)"`).FindStringSubmatch(readRepoFile(t, "examples/other-backend/cmd/libraryd/main.go"))
	if listen == nil || listen[1] != readmeLibrarydAddr {
		t.Errorf("libraryd's default address %v, want %s", listen, readmeLibrarydAddr)
	}
	readme := readRepoFile(t, "examples/other-backend/README.md")
	for _, want := range []string{"SITE_ADDRESS=http://" + readmeGatewayAddr, "UPSTREAM=" + readmeLibrarydAddr, "CIVICGATE_ADMIN=" + exampleAdminAddr} {
		if !strings.Contains(readme, want) {
			t.Errorf("README does not set %s", want)
		}
	}
	for _, addr := range []string{readmeLibrarydAddr, readmeGatewayAddr, exampleAdminAddr} {
		if owner := makeUp[portOf(addr)]; owner != "" {
			t.Errorf("the example's %s collides with make up's port (%s)", addr, owner)
		}
	}
}
