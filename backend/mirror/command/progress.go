package command

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/civicgate/civicgate/backend/mirror"
)

// progress draws a bar redrawn with \r on a terminal, and plain lines (at most every 2 s) otherwise.
type progress struct {
	w        io.Writer
	tty      bool
	label    string
	total    int
	last     time.Time
	drawn    bool
	interval time.Duration
}

func newProgress(w io.Writer, tty bool, label string, total int) *progress {
	return &progress{w: w, tty: tty, label: label, total: total, interval: 2 * time.Second}
}

func (p *progress) update(st mirror.Stats) {
	if p.tty {
		fmt.Fprintf(p.w, "\r%s %s", p.bar(st.Read), counts(st))
		p.drawn = true
		return
	}
	if time.Since(p.last) < p.interval {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "sync %s: progress %s\n", p.label, counts(st))
}

func (p *progress) bar(read int) string {
	const width = 30
	if p.total <= 0 {
		return fmt.Sprintf("%s [%d read]", p.label, read)
	}
	n := min(width, read*width/p.total)
	return fmt.Sprintf("%s [%s%s] %3d%%", p.label, strings.Repeat("#", n), strings.Repeat(".", width-n), read*100/p.total)
}

func (p *progress) clear() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) done(st mirror.Stats) {
	p.clear()
	fmt.Fprintf(p.w, "sync %s: done %s\n", p.label, counts(st))
}

// counts is the summary: read = created + updated + unchanged + duplicate + malformed; deleted are records
// of earlier imports; then the notes by kind (e.g. title_fallback=3 skipped_file=4), in name order.
func counts(st mirror.Stats) string {
	out := fmt.Sprintf("read=%d created=%d updated=%d unchanged=%d duplicate=%d deleted=%d malformed=%d",
		st.Read, st.Created, st.Updated, st.Unchanged, st.Duplicate, st.Deleted, st.Malformed)
	kinds := make([]string, 0, len(st.Notes))
	for k := range st.Notes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		out += fmt.Sprintf(" %s=%d", k, st.Notes[k])
	}
	return out
}
