package layering

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// trackerRef matches a citation of the issue tracker: the word issue (or
// issues) followed by a number, "#" and a number, or a hyphen and a number,
// and "turn-" with a number. The tracker is not in the repository, so such a
// citation leads a reader nowhere; comments cite docs/design.md D<n>, a doc
// section or the code instead (README.md "Development"). \b keeps words that
// merely contain the letters — issued, issue_areas, ldaIssues — out, and a
// link to another project's tracker (…/issues/123) does not match.
var trackerRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]+|\bissue-[0-9]+|\bturn-[0-9]+`)

// citation is one tracker reference: where, and the text matched.
type citation struct {
	file string
	line int
	text string
}

func (c citation) String() string { return fmt.Sprintf("%s:%d %s", c.file, c.line, c.text) }

// ignoredDir reports whether a directory of that name is left out of the
// checks: the ones the go command ignores (testdata — which holds the
// checker's own examples — names starting with "." or "_") and vendored code.
func ignoredDir(name string) bool {
	return name == "testdata" || name == "vendor" || name == "node_modules" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// trackerCitations parses every Go file under root — skipping directories the
// go command ignores (testdata, vendor, names starting with "." or "_") below
// root — and returns each tracker reference in a comment or a string literal
// (what a program prints, e.g. a benchmark report, is read like a comment),
// in file and line order.
func trackerCitations(t *testing.T, root string) []citation {
	t.Helper()
	var found []citation
	fset := token.NewFileSet()
	check := func(pos token.Pos, text string) {
		for _, m := range trackerRef.FindAllStringIndex(text, -1) {
			p := fset.Position(pos + token.Pos(m[0]))
			rel, _ := filepath.Rel(root, p.Filename)
			found = append(found, citation{filepath.ToSlash(rel), p.Line, text[m[0]:m[1]]})
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && ignoredDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // moved or deleted since the directory was listed: nothing left to cite
		}
		if err != nil {
			return fmt.Errorf("parse: %w", err)
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				check(c.Slash, c.Text)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				check(lit.ValuePos, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	sortCitations(found)
	return found
}

func sortCitations(found []citation) {
	slices.SortStableFunc(found, func(a, b citation) int {
		return cmp.Or(strings.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
}

// markdownCitations returns each tracker reference in the Markdown files
// (slash-separated, relative to root), in file and line order. The whole
// text is read — headings, prose, tables and code blocks alike: a heading
// named after an issue number leads a reader nowhere either.
func markdownCitations(t *testing.T, root string, files []string) []citation {
	t.Helper()
	var found []citation
	for _, file := range files {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range trackerRef.FindAllString(line, -1) {
				found = append(found, citation{file, i + 1, m})
			}
		}
	}
	sortCitations(found)
	return found
}

// repositoryMarkdown lists the repository's Markdown files with git — tracked,
// plus untracked ones that are not ignored, so a new document is checked
// before its first commit — relative to its root, without those under an
// ignoredDir.
func repositoryMarkdown(t *testing.T) (root string, files []string) {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v (the check lists the repository's Markdown files with git)", err)
	}
	root = strings.TrimSpace(string(top))
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, file := range strings.Split(string(out), "\x00") {
		dirs := strings.Split(file, "/")
		if file == "" || slices.ContainsFunc(dirs[:len(dirs)-1], ignoredDir) || slices.Contains(files, file) {
			continue // a file is listed twice while merging
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
			continue // tracked but deleted in the work tree
		}
		files = append(files, file)
	}
	return root, files
}

// TestCommentsCiteTheRepository: no Go comment or string literal of the
// module cites the issue tracker (README.md "Development").
func TestCommentsCiteTheRepository(t *testing.T) {
	for _, c := range trackerCitations(t, filepath.Join("..", "..", "..")) {
		t.Errorf("%s:%d: %q cites the issue tracker, which is not in the repository; cite docs/design.md D<n>, a doc section or the code instead", c.file, c.line, c.text)
	}
}

// TestMarkdownCitesTheRepository: no Markdown file of the repository cites
// the issue tracker either (README.md "Development"); a link to another
// project's tracker (…/issues/123) is fine.
func TestMarkdownCitesTheRepository(t *testing.T) {
	root, files := repositoryMarkdown(t)
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files under %s: %v", len(files), root, files)
	}
	for _, c := range markdownCitations(t, root, files) {
		t.Errorf("%s:%d: %q cites the issue tracker, which is not in the repository; say what it means (docs/design.md D<n>, a doc section, the work by name) instead", c.file, c.line, c.text)
	}
}

// TestTrackerCitationsFound: the checker finds every spelling of a tracker
// reference in testdata/cites/cites.go.txt, on its line, and none of the words
// that only contain the letters, so the test above can fail. The expected list
// is testdata/cites/want.txt (kept out of this file, which the test above
// reads). The fixture is stored as .txt and parsed as cites.go from a
// temporary directory, so the repository holds no Go file that cites the
// tracker, not even this deliberate one.
func TestTrackerCitationsFound(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "cites", "cites.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cites.go"), fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range trackerCitations(t, dir) {
		got = append(got, c.String())
	}
	wantText, err := os.ReadFile(filepath.Join("testdata", "cites", "want.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(wantText)), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("citations found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMarkdownTrackerCitationsFound: the Markdown check finds every spelling
// in testdata/cites/cites.md — in a heading, prose, a table, a link's text
// and a code block — on its line, and no link to another tracker or word
// that only contains the letters. The expected list is
// testdata/cites/want-md.txt.
func TestMarkdownTrackerCitationsFound(t *testing.T) {
	var got []string
	for _, c := range markdownCitations(t, filepath.Join("testdata", "cites"), []string{"cites.md"}) {
		got = append(got, c.String())
	}
	wantText, err := os.ReadFile(filepath.Join("testdata", "cites", "want-md.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(wantText)), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("citations found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
