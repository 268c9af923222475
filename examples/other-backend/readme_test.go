package otherbackend

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEShowsThisCaddyfile: the README's worked example is this
// directory's Caddyfile exactly (after the file's header comment), so the
// tests that run the file run what the README shows.
func TestREADMEShowsThisCaddyfile(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	const intro = "a trusted-documents manifest:\n\n```caddyfile\n"
	_, block, ok := strings.Cut(string(readme), intro)
	if !ok {
		t.Fatal("README.md no longer introduces the worked example with " + intro)
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatal("the README's worked example block does not end")
	}
	body := string(file)
	i := strings.Index(body, "\n{\n")
	if i < 0 {
		t.Fatal("Caddyfile: no global options block after the header comment")
	}
	if body = body[i+1:]; block != body {
		t.Fatalf("README.md's worked example differs from examples/other-backend/Caddyfile:\n--- README\n%s\n--- Caddyfile\n%s", block, body)
	}
}
