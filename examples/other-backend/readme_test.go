package otherbackend

import (
	"os"
	"strings"
	"testing"
)

// TestDocShowsThisCaddyfile: the worked example of docs/other-backend.md is
// this directory's Caddyfile exactly (after the file's header comment), so
// the tests that run the file run what the walk-through shows.
func TestDocShowsThisCaddyfile(t *testing.T) {
	doc, err := os.ReadFile("../../docs/other-backend.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	const intro = "a trusted-documents manifest:\n\n```caddyfile\n"
	_, block, ok := strings.Cut(string(doc), intro)
	if !ok {
		t.Fatal("docs/other-backend.md no longer introduces the worked example with " + intro)
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatal("the worked example block of docs/other-backend.md does not end")
	}
	body := string(file)
	i := strings.Index(body, "\n{\n")
	if i < 0 {
		t.Fatal("Caddyfile: no global options block after the header comment")
	}
	if body = body[i+1:]; block != body {
		t.Fatalf("docs/other-backend.md's worked example differs from examples/other-backend/Caddyfile:\n--- docs/other-backend.md\n%s\n--- Caddyfile\n%s", block, body)
	}
}
