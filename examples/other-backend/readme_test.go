package otherbackend

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestReadmeKeepsKeysOutOfTheSourceTree: the README's commands keep the keys
// file, and the keys.json.lock the key commands take beside it, in a
// directory git ignores — not in this one, where a new operator found them
// untracked after trying the example.
func TestReadmeKeepsKeysOutOfTheSourceTree(t *testing.T) {
	readme := readRepoFile(t, "examples/other-backend/README.md")
	state := regexp.MustCompile(`(?m)^state=\$\(realpath \.\./\.\.\)/(\S+)`).FindStringSubmatch(readme)
	if state == nil {
		t.Fatal("README: no line state=$(realpath ../..)/<dir> names where the keys file lives")
	}
	for _, file := range []string{"keys.json", "keys.json.lock"} {
		check := exec.Command("git", "check-ignore", "-q", "--no-index", state[1]+"/"+file)
		check.Dir = filepath.Join("..", "..")
		if err := check.Run(); err != nil {
			t.Errorf("git does not ignore %s/%s (git check-ignore: %v)", state[1], file, err)
		}
	}
	var uses []string
	for _, block := range strings.Split(readme, "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "\n```")
		uses = append(uses, regexp.MustCompile(`[^\s=]*keys\.json\b`).FindAllString(block, -1)...)
	}
	if len(uses) == 0 {
		t.Fatal("README: no command names the keys file")
	}
	for _, use := range uses {
		if !strings.HasPrefix(strings.Trim(use, `"`), "$state/") {
			t.Errorf("README: the command's keys file %s is outside $state", use)
		}
	}
	if n := strings.Count(readme, `--file "$state/keys.json"`); n == 0 {
		t.Error(`README: keys issue does not write --file "$state/keys.json"`)
	}
}
