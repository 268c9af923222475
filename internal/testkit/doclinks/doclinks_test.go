package doclinks

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryLinks: every relative link of every Markdown file in the
// repository (tracked, or new and not ignored) resolves, its #anchor
// included. testdata/ directories hold deliberately broken examples and are
// left out.
func TestRepositoryLinks(t *testing.T) {
	root, files := markdownFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files under %s: %v", len(files), root, files)
	}
	broken, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// markdownFiles lists the repository's Markdown files with git (tracked,
// plus untracked files that are not ignored), relative to its root.
func markdownFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v (the check lists the repository's files with git)", err)
	}
	root = strings.TrimSpace(string(top))
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, file := range strings.Split(string(out), "\x00") {
		if file == "" || slices.Contains(strings.Split(file, "/"), "testdata") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			continue // tracked but deleted in the work tree: nothing links to it any more, or the link is reported
		}
		if !slices.Contains(files, file) { // --cached and --others never overlap, but a file may be listed twice while merging
			files = append(files, file)
		}
	}
	return root, files
}

// TestCheckerFindsBrokenLinks: the checker reports each kind of broken link
// of testdata/bad.md, with its line, and nothing in testdata/good.md (which
// holds links in code, a repeated heading, a heading with code and a link,
// a setext heading, URLs and a directory).
func TestCheckerFindsBrokenLinks(t *testing.T) {
	broken, err := Check("testdata", []string{"good.md", "bad.md", "sub/target.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.String())
	}
	want := []string{
		"bad.md:3: missing.md: no such file or directory: missing.md",
		"bad.md:4: sub/target.md#nowhere: no heading with anchor #nowhere in sub/target.md",
		"bad.md:4: sub/target.md#Setext-Heading: no heading with anchor #Setext-Heading in sub/target.md",
		"bad.md:5: #a-bad-doc: no heading with anchor #a-bad-doc in bad.md",
		"bad.md:6: ../../../../../etc/passwd: points outside the repository",
		"bad.md:7: sub/target.md#missing-reference: no heading with anchor #missing-reference in sub/target.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckerUnreadableFile: a file that cannot be read is an error, not a
// clean result.
func TestCheckerUnreadableFile(t *testing.T) {
	if _, err := Check("testdata", []string{"absent.md"}); err == nil {
		t.Fatal("Check of a missing file: no error")
	}
}

// TestSlug pins GitHub's heading anchors for headings of this repository's
// documents.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Where the key goes — and where it must not": "where-the-key-goes--and-where-it-must-not",
		"POST /v1/graphql": "post-v1graphql",
		"Global option `civic_auth` (app) and directive `civic_auth`":         "global-option-civic_auth-app-and-directive-civic_auth",
		"D35. A response cache kept exact by the change feed":                 "d35-a-response-cache-kept-exact-by-the-change-feed",
		"Two live keys per organization: rotation":                            "two-live-keys-per-organization-rotation",
		"API (bearer key; errors as [docs/api.md \"Errors\"](api.md#errors))": "api-bearer-key-errors-as-docsapimd-errors",
		"Mutations, operation types and families (D25)":                       "mutations-operation-types-and-families-d25",
		"The organization console's hostile cases":                            "the-organization-consoles-hostile-cases",
		"**Bold** and <a name=\"x\"></a>tag":                                  "bold-and-tag",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestAnchorsRepeatedHeadings: a repeated heading gets -1, -2 as on GitHub,
// and headings inside a fenced block are not headings.
func TestAnchorsRepeatedHeadings(t *testing.T) {
	got := Anchors("# Notes\n\n## Notes\n\n```\n# Notes\n```\n\n### Notes\n")
	for _, a := range []string{"notes", "notes-1", "notes-2"} {
		if !got[a] {
			t.Errorf("anchor %q missing from %v", a, got)
		}
	}
	if got["notes-3"] {
		t.Errorf("a heading in a fenced block counted: %v", got)
	}
}
