package mirror

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestEventFamiliesFileNamesEveryFamily: the gateway's webhook app learns the
// change-event families from caddyfile/event-families.caddy (docs/design.md
// D72); it must name exactly the families this package writes events for.
func TestEventFamiliesFileNamesEveryFamily(t *testing.T) {
	src, err := os.ReadFile("../../caddyfile/event-families.caddy")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for line := range strings.Lines(string(src)) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "event_families" {
			listed = append(listed, f[1:]...)
		}
	}
	want := []string{string(Bills), string(Members), string(RegulatoryFilings), string(FederalBudgets), string(LobbyingDisclosures)}
	if !slices.Equal(listed, want) {
		t.Fatalf("caddyfile/event-families.caddy lists %q, the mirror writes %q (in docs/api.md's order)", listed, want)
	}
}
