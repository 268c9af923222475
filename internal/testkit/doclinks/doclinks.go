// Package doclinks checks the relative links of Markdown files: a link must
// name a file or directory that exists, and its #anchor must name a heading
// of the target Markdown file, spelled as GitHub spells heading anchors. It
// reads files only, so it runs in `make check` (no service needed).
package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"unicode"
)

// Broken is one link that does not resolve.
type Broken struct {
	File   string // slash-separated, relative to the root given to Check
	Line   int    // 1-based
	Link   string // as written
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Link, b.Reason)
}

// link is one link destination found in a Markdown file.
type link struct {
	line int
	dest string
}

// Check resolves every relative link of files (slash-separated paths
// relative to root) and returns the ones that do not resolve, in file and
// line order. Links with a scheme (https:, mailto:) or a host are not
// followed. An error means a file of files could not be read.
func Check(root string, files []string) ([]Broken, error) {
	anchorsOf := map[string]map[string]bool{} // Markdown file → its anchors, read once
	anchors := func(file string) (map[string]bool, error) {
		if a, ok := anchorsOf[file]; ok {
			return a, nil
		}
		text, err := os.ReadFile(path.Join(root, file))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		a := Anchors(string(text))
		anchorsOf[file] = a
		return a, nil
	}
	var broken []Broken
	for _, file := range files {
		text, err := os.ReadFile(path.Join(root, file))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		for _, l := range links(string(text)) {
			reason, err := resolve(root, file, l.dest, anchors)
			if err != nil {
				return nil, err
			}
			if reason != "" {
				broken = append(broken, Broken{File: file, Line: l.line, Link: l.dest, Reason: reason})
			}
		}
	}
	return broken, nil
}

// hasScheme matches a destination that is not a path in the repository:
// a URL scheme (https:, mailto:) or a network path (//host).
var hasScheme = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*:|//)`)

// resolve says why dest, written in file, does not resolve ("" when it does).
func resolve(root, file, dest string, anchors func(string) (map[string]bool, error)) (string, error) {
	if dest == "" || hasScheme.MatchString(dest) {
		return "", nil
	}
	target, fragment, hasFragment := strings.Cut(dest, "#")
	target, _, _ = strings.Cut(target, "?")
	target, err := url.PathUnescape(target)
	if err != nil {
		return "the path is not validly escaped", nil
	}
	if fragment, err = url.PathUnescape(fragment); err != nil {
		return "the anchor is not validly escaped", nil
	}
	resolved := file
	if target != "" {
		if strings.HasPrefix(target, "/") {
			return "an absolute path: write it relative to " + file, nil
		}
		resolved = path.Join(path.Dir(file), target)
		if resolved == ".." || strings.HasPrefix(resolved, "../") {
			return "points outside the repository", nil
		}
		info, err := os.Stat(path.Join(root, resolved))
		if err != nil {
			return "no such file or directory: " + resolved, nil
		}
		if info.IsDir() {
			if hasFragment {
				return "an anchor on a directory", nil
			}
			return "", nil
		}
	}
	if !hasFragment || !strings.HasSuffix(strings.ToLower(resolved), ".md") {
		return "", nil // an anchor in another kind of file (a line of code) is not checked
	}
	a, err := anchors(resolved)
	if err != nil {
		return "", err
	}
	if !a[fragment] {
		return fmt.Sprintf("no heading with anchor #%s in %s", fragment, resolved), nil
	}
	return "", nil
}

var (
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	// atxHeading is a "# Title" heading; a closing run of #s is not part of it.
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// setextUnderline underlines the line before it as a heading.
	setextUnderline = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	// htmlAnchor is an explicit anchor: <a name="x"> or id="x".
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*\b(?:name|id)="([^"]+)"`)
	// referenceDefinition is "[label]: destination".
	referenceDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:[ \t]*(<[^>]*>|\S+)`)
	// inlineLink is a link or image "[text](" up to the destination; the
	// destination itself is read by destination.
	inlineLink = regexp.MustCompile(`\]\(`)
	// linkInHeading and htmlTag are markup GitHub renders away before it
	// builds an anchor: a link or image keeps its text, a tag goes.
	linkInHeading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag       = regexp.MustCompile(`<[^>]+>`)
)

// lines calls yield with each line of markdown outside fenced code blocks,
// and its 1-based number.
func lines(markdown string, yield func(number int, line string)) {
	var open string // the fence that opened the current code block
	for i, line := range strings.Split(markdown, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line) == m[1]:
				open = ""
				continue
			}
		}
		if open == "" {
			yield(i+1, line)
		}
	}
}

// Anchors returns the anchors GitHub gives the headings of markdown (and
// any explicit <a name> or id), a repeated heading numbered -1, -2, ….
func Anchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	add := func(heading string) {
		slug := Slug(heading)
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug = fmt.Sprintf("%s-%d", slug, n+1)
		} else {
			seen[slug] = 0
		}
		anchors[slug] = true
	}
	previous := "" // the line before, for setext headings; "" after a blank line or a block
	lines(markdown, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		switch {
		case atxHeading.MatchString(line):
			add(atxHeading.FindStringSubmatch(line)[1])
			previous = ""
			return
		case previous != "" && setextUnderline.MatchString(line):
			add(previous)
			previous = ""
			return
		}
		previous = strings.TrimSpace(line)
		if strings.HasPrefix(previous, "|") || strings.HasPrefix(previous, "- ") ||
			strings.HasPrefix(previous, "* ") || strings.HasPrefix(previous, ">") {
			previous = "" // a table row, list item or quote is not a setext heading's text
		}
	})
	return anchors
}

// Slug is the anchor GitHub gives a heading: its rendered text lowercased,
// each space a '-', every character that is not a letter, a digit, '-' or
// '_' removed.
func Slug(heading string) string {
	text := linkInHeading.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.TrimSpace(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// links returns the destinations of the inline links, images and reference
// definitions of markdown, outside code blocks and code spans.
func links(markdown string) []link {
	var found []link
	lines(markdown, func(number int, line string) {
		line = withoutCodeSpans(line)
		if m := referenceDefinition.FindStringSubmatch(line); m != nil {
			found = append(found, link{number, strings.Trim(m[1], "<>")})
			return
		}
		for _, at := range inlineLink.FindAllStringIndex(line, -1) {
			if dest, ok := destination(line[at[1]:]); ok {
				found = append(found, link{number, dest})
			}
		}
	})
	return found
}

// destination reads a link destination from the text after "](": <…> or
// up to the first space or the ')' that balances the opening one.
func destination(rest string) (string, bool) {
	if strings.HasPrefix(rest, "<") {
		end := strings.IndexByte(rest, '>')
		return rest[1:max(end, 1)], end > 0
	}
	depth := 0
	for i, r := range rest {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth == 0, r == ' ' || r == '\t':
			return rest[:i], true
		case r == ')':
			depth--
		}
	}
	return "", false // no closing ')' on this line: not a link
}

// withoutCodeSpans blanks every `code span` of line (a run of backticks to
// the next run of the same length), so that nothing in one reads as a link.
func withoutCodeSpans(line string) string {
	if !strings.Contains(line, "`") {
		return line
	}
	b := []byte(line)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		closing := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(b) && b[j+m] == '`' {
				m++
			}
			if m == n {
				closing = j
				break
			}
			j += m
		}
		if closing < 0 {
			i += n // an unmatched run is literal backticks
			continue
		}
		for k := i; k < closing+n; k++ {
			b[k] = ' '
		}
		i = closing + n
	}
	return string(b)
}
