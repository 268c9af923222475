package usagechart

import (
	"html/template"
	"io"
	"math"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// Colours are the Okabe–Ito palette's, chosen to stay distinguishable under
// the common colour-vision deficiencies; each has a contrast of at least 3:1
// against white (tested). Stacked segments are also told apart by their fixed
// order (OK at the bottom, then errors, then refused, as in the legend) and a
// thin white line between them.
const (
	colOK      = "#0072B2" // blue, 5.2:1
	colErrors  = "#D55E00" // vermillion, 3.9:1
	colRefused = "#CC79A7" // reddish purple, 3.1:1
	colCost    = "#333333" // dark grey line, 12.6:1
	colText    = "#333333"
	colAxis    = "#767676" // 4.5:1
	colGrid    = "#DDDDDD" // decoration only
)

// Default option values.
const (
	DefaultWidth  = 720
	DefaultHeight = 240
	DefaultTitle  = "API usage"
	DefaultID     = "usagechart"
	// EmptyText is what the chart says when nothing was counted.
	EmptyText = "No requests in this period"
)

// Options shape the chart SVG draws.
type Options struct {
	// Title is the chart's accessible name (its <title>); it is escaped, so
	// it may hold untrusted text such as a key id. Default DefaultTitle.
	Title string
	// Width and Height are the viewBox size (default 720x240, clamped to
	// 360..4000 x 140..2000). The svg element is width="100%", so the chart
	// scales to its container, a phone's screen included.
	Width, Height int
	// Step is the bucket size, which picks the label format: hours ("15:00")
	// below a day, dates ("Nov 23") for whole days. 0: the distance between
	// the first two points, or an hour.
	Step time.Duration
	// Location is where hour labels are read (default UTC). Day buckets are
	// UTC days and are labelled with their UTC date whatever Location is.
	Location *time.Location
	// ID prefixes the ids of the <title> and <desc> that aria-labelledby
	// names; give several charts on one page distinct IDs. Only ASCII
	// letters, digits, '-' and '_' are kept. Default DefaultID.
	ID string
}

// SVG writes pts (as Bucket returns them) as an SVG chart: stacked bars of
// the admitted requests that succeeded (admitted minus 4xx and 5xx), the
// errors (4xx and 5xx) and the refused (429) per bucket, over a separate small
// line chart of the cost points sharing the x axis. The svg element has
// role="img", a <title> and a <desc> summarising the totals in words, named
// by aria-labelledby; every non-empty bucket has a column with a <title>
// tooltip giving its numbers. In those texts "admitted" counts every
// admitted request, errors included, as usage.Delta and CSV do. Nothing uses
// a style attribute, a style element or a script, so the markup passes
// style-src 'self'. Empty or all-zero pts draw a chart saying EmptyText.
// The only error is w's.
func SVG(w io.Writer, pts []Point, opt Options) error {
	_, err := w.Write(newChart(pts, opt).render())
	return err
}

// HTML is SVG's markup for an html/template page ({{.Chart}}). It is safe as
// HTML: every text in it is escaped or generated.
func HTML(pts []Point, opt Options) template.HTML {
	return template.HTML(newChart(pts, opt).render()) //nolint:gosec // escaped by render
}

// chart is one rendering: the options resolved and the layout.
type chart struct {
	pts       []Point
	w, h      float64
	step      time.Duration
	loc       *time.Location
	id, title string
	daily     bool // whole-day buckets, labelled as UTC dates
	multiYear bool // pts span two calendar years: tooltips say the year
	total     usage.Delta
	empty     bool

	left, right       float64 // plot x extent
	top, base         float64 // bar plot y extent; base is the zero line
	costTop, costBase float64 // cost plot y extent
	slot              float64 // width of one bucket's column
	yStep, yTop       float64 // bar axis tick interval and top value
}

func newChart(pts []Point, opt Options) *chart {
	c := &chart{pts: pts, title: opt.Title, loc: opt.Location, step: opt.Step, id: sanitizeID(opt.ID)}
	if c.title == "" {
		c.title = DefaultTitle
	}
	if c.step <= 0 {
		c.step = time.Hour
		if len(pts) >= 2 {
			if d := pts[1].Start.Sub(pts[0].Start); d > 0 {
				c.step = d
			}
		}
	}
	c.w = float64(clamp(opt.Width, DefaultWidth, 360, 4000))
	c.h = float64(clamp(opt.Height, DefaultHeight, 140, 2000))
	if k := bucketsPerBar(len(pts), c.w-plotMargins); k > 1 {
		c.pts, c.step = merge(pts, k), c.step*time.Duration(k)
	}
	pts = c.pts
	c.daily = c.step%dayLength == 0
	if c.loc == nil || c.daily {
		c.loc = time.UTC
	}
	hi := 0.0
	for _, p := range pts {
		c.total = c.total.Plus(p.Delta)
		ok, e, r := split(p.Delta)
		hi = max(hi, float64(ok)+float64(e)+float64(r))
	}
	c.empty = c.total == usage.Delta{}
	c.yStep, c.yTop = niceScale(hi, 4)
	if n := len(pts); n > 0 {
		c.multiYear = pts[0].Start.In(c.loc).Year() != pts[n-1].Start.In(c.loc).Year()
	}
	return c
}

// MinSlot is the least width, in viewBox units, of one bar's column
// (bar and gap): a series with more buckets than fit side by side at that
// width is drawn with k adjacent buckets summed per bar, so bars stay wide
// enough to see (168 hourly buckets at the default width: 2-hour bars, 6.3
// units wide) and together span the plot. Its desc and tooltips then speak
// of k-bucket periods.
const MinSlot = 7.0

// plotMargins is the width left of and right of the plot (axis labels).
const plotMargins = 54.0

// bucketsPerBar is how many adjacent buckets one bar sums so that n
// buckets fit in plotW at MinSlot each.
func bucketsPerBar(n int, plotW float64) int {
	fit := max(int(plotW/MinSlot), 1)
	return (n + fit - 1) / fit
}

// merge sums each run of k adjacent points into one, starting at the run's
// first point (the last run may be shorter).
func merge(pts []Point, k int) []Point {
	out := make([]Point, 0, (len(pts)+k-1)/k)
	for i := 0; i < len(pts); i += k {
		p := Point{Start: pts[i].Start}
		for _, q := range pts[i:min(i+k, len(pts))] {
			p.Delta = p.Plus(q.Delta)
		}
		out = append(out, p)
	}
	return out
}

func clamp(v, def, lo, hi int) int {
	if v <= 0 {
		return def
	}
	return min(max(v, lo), hi)
}

func sanitizeID(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b = append(b, c)
		}
	}
	if len(b) == 0 {
		return DefaultID
	}
	return string(b)
}

func (c *chart) render() []byte {
	w := &buf{b: make([]byte, 0, 2048+len(c.pts)*260)}
	w.s(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 `)
	w.f(c.w)
	w.s(" ")
	w.f(c.h)
	w.s(`" width="100%" role="img" aria-labelledby="`)
	w.s(c.id + "-title " + c.id + "-desc")
	w.s(`" font-family="system-ui,sans-serif" font-size="11"><title id="`)
	w.s(c.id)
	w.s(`-title">`)
	w.esc(c.title)
	w.s(`</title><desc id="`)
	w.s(c.id)
	w.s(`-desc">`)
	w.esc(c.describe())
	w.s("</desc>")
	top := 8.0
	if !c.empty {
		top = c.legend(w)
	}
	c.layout(top)
	if c.empty {
		w.s(`<path stroke="` + colAxis + `" d="M`)
		c.hline(w, c.base)
		w.s(`"/><text x="`)
		w.f(c.w / 2)
		w.s(`" y="`)
		w.f((c.top + c.base) / 2)
		w.s(`" text-anchor="middle" font-size="14" fill="` + colText + `">` + EmptyText + `</text>`)
	} else {
		c.yAxis(w)
		c.bars(w)
		c.costLine(w)
	}
	c.xAxis(w)
	if !c.empty {
		c.hits(w)
	}
	w.s("</svg>")
	return w.b
}

// legend draws the legend rows from the top left, wrapping when a row is
// full, and returns where the plot can start.
func (c *chart) legend(w *buf) float64 {
	items := [...]struct{ text, col string }{
		{"Admitted, OK", colOK}, {"Errors (4xx, 5xx)", colErrors}, {"Refused (429)", colRefused}, {"Cost points", ""},
	}
	const x0, rowH = 8.0, 16.0
	x, y := x0, 6.0
	w.s(`<g fill="` + colText + `">`)
	for _, it := range items {
		iw := 14 + textW(it.text)
		if x > x0 && x+iw > c.w-8 {
			x, y = x0, y+rowH
		}
		if it.col != "" {
			w.s(`<rect x="`)
			w.f(x)
			w.s(`" y="`)
			w.f(y + 2)
			w.s(`" width="10" height="10" fill="` + it.col + `"/>`)
		} else {
			w.s(`<path stroke="` + colCost + `" stroke-width="2" d="M`)
			w.f(x)
			w.s(" ")
			w.f(y + 7)
			w.s(`h10"/>`)
		}
		w.s(`<text x="`)
		w.f(x + 14)
		w.s(`" y="`)
		w.f(y + 11)
		w.s(`">` + it.text + `</text>`)
		x += iw + 14
	}
	w.s("</g>")
	return y + rowH + 6
}

// layout places the bar plot from top down, the cost plot under it and the
// x-axis labels at the bottom.
func (c *chart) layout(top float64) {
	c.left, c.right = 44, c.w-(plotMargins-44)
	bottom := c.h - 22
	avail := bottom - top
	costH, gap := math.Max(math.Round(avail*0.22), 24), 14.0
	if c.empty {
		costH, gap = 0, 0
	}
	c.top = top
	c.base = bottom - costH - gap
	c.costTop, c.costBase = c.base+gap, bottom
	c.slot = (c.right - c.left) / float64(max(len(c.pts), 1))
}

// hline appends a horizontal line at y across the plot (path data).
func (c *chart) hline(w *buf, y float64) {
	w.f(c.left)
	w.s(" ")
	w.f(y)
	w.s("H")
	w.f(c.right)
}

// yAxis draws the grid lines and tick labels of round values.
func (c *chart) yAxis(w *buf) {
	n := int(math.Round(c.yTop / c.yStep))
	sy := (c.base - c.top) / c.yTop
	w.s(`<path stroke="` + colGrid + `" d="`)
	for i := 1; i <= n; i++ {
		w.s("M")
		c.hline(w, c.base-float64(i)*c.yStep*sy)
	}
	w.s(`"/><path stroke="` + colAxis + `" d="M`)
	c.hline(w, c.base)
	w.s(`"/><g fill="` + colText + `" text-anchor="end">`)
	for i := 0; i <= n; i++ {
		w.s(`<text x="`)
		w.f(c.left - 4)
		w.s(`" y="`)
		w.f(c.base - float64(i)*c.yStep*sy + 4)
		w.s(`">`)
		w.s(compact(float64(i) * c.yStep))
		w.s("</text>")
	}
	w.s("</g>")
}

// bars draws one path per series: a rectangle per non-empty segment.
func (c *chart) bars(w *buf) {
	bw := c.slot * 0.8
	if c.slot < 3 {
		bw = c.slot
	}
	off := (c.slot - bw) / 2
	sy := (c.base - c.top) / c.yTop
	if bw >= 2 {
		w.s(`<g stroke="#fff" stroke-width="0.5">`)
	} else {
		w.s("<g>")
	}
	for s, col := range [...]string{colOK, colErrors, colRefused} {
		mark := len(w.b)
		w.s(`<path fill="` + col + `" d="`)
		drawn := false
		for i := range c.pts {
			ok, e, r := split(c.pts[i].Delta)
			seg := [...]float64{float64(ok), float64(e), float64(r)}
			lo := 0.0
			for j := range s {
				lo += seg[j]
			}
			if seg[s] == 0 {
				continue
			}
			y0, y1 := round1(c.base-lo*sy), round1(c.base-(lo+seg[s])*sy)
			if y0-y1 < 0.05 {
				continue
			}
			w.s("M")
			w.f(c.left + float64(i)*c.slot + off)
			w.s(" ")
			w.f(y1)
			w.s("h")
			w.f(bw)
			w.s("v")
			w.f(y0 - y1)
			w.s("h")
			w.f(-bw)
			w.s("z")
			drawn = true
		}
		if !drawn {
			w.b = w.b[:mark]
			continue
		}
		w.s(`"/>`)
	}
	w.s("</g>")
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// costLine draws the cost points as a line through the bucket centres on
// their own scale, under the bars.
func (c *chart) costLine(w *buf) {
	hi := 0.0
	for _, p := range c.pts {
		hi = max(hi, float64(p.Cost))
	}
	_, top := niceScale(hi, 4)
	sy := (c.costBase - c.costTop) / top
	w.s(`<path stroke="` + colGrid + `" d="M`)
	c.hline(w, c.costTop)
	w.s(`"/><path stroke="` + colAxis + `" d="M`)
	c.hline(w, c.costBase)
	w.s(`"/><g fill="` + colText + `" text-anchor="end"><text x="`)
	w.f(c.left - 4)
	w.s(`" y="`)
	w.f(c.costTop + 4)
	w.s(`">` + compact(top) + `</text><text x="`)
	w.f(c.left - 4)
	w.s(`" y="`)
	w.f(c.costBase + 4)
	w.s(`">0</text></g><polyline fill="none" stroke="` + colCost + `" stroke-width="1.5" stroke-linejoin="round" points="`)
	for i, p := range c.pts {
		y := c.costBase - float64(max(p.Cost, 0))*sy
		if len(c.pts) == 1 {
			w.f(c.left)
			w.s(",")
			w.f(y)
			w.s(" ")
			w.f(c.right)
		} else {
			if i > 0 {
				w.s(" ")
			}
			w.f(c.left + (float64(i)+0.5)*c.slot)
		}
		w.s(",")
		w.f(y)
	}
	w.s(`"/>`)
}

// hits draws an invisible column over each non-empty bucket, bars and cost
// plot, carrying the bucket's numbers as a <title> tooltip.
func (c *chart) hits(w *buf) {
	w.s(`<g fill="#fff" fill-opacity="0">`)
	for i := range c.pts {
		p := &c.pts[i]
		if p.Delta == (usage.Delta{}) {
			continue
		}
		w.s(`<path d="M`)
		w.f(c.left + float64(i)*c.slot)
		w.s(" ")
		w.f(c.top)
		w.s("h")
		w.f(c.slot)
		w.s("v")
		w.f(c.costBase - c.top)
		w.s("h")
		w.f(-c.slot)
		w.s(`z"><title>`)
		w.b = c.appendWhen(w.b, p.Start)
		w.s(" — ")
		c.appendCounts(w, p.Delta)
		w.s("</title></path>")
	}
	w.s("</g>")
}
