package layering

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
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
	slices.SortStableFunc(found, func(a, b citation) int {
		return cmp.Or(strings.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
	return found
}

// TestCommentsCiteTheRepository: no Go comment or string literal of the
// module cites the issue tracker (README.md "Development").
func TestCommentsCiteTheRepository(t *testing.T) {
	for _, c := range trackerCitations(t, filepath.Join("..", "..")) {
		t.Errorf("%s:%d: %q cites the issue tracker, which is not in the repository; cite docs/design.md D<n>, a doc section or the code instead", c.file, c.line, c.text)
	}
}

// TestTrackerCitationsFound: the checker finds every spelling of a tracker
// reference in testdata/cites, on its line, and none of the words that only
// contain the letters, so the test above can fail. The expected list is
// testdata/cites/want.txt (kept out of this file, which the test above reads).
func TestTrackerCitationsFound(t *testing.T) {
	var got []string
	for _, c := range trackerCitations(t, filepath.Join("testdata", "cites")) {
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
