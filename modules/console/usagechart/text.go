package usagechart

import (
	"fmt"
	"strings"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// xLabel is one x-axis label, centred on x.
type xLabel struct {
	x    float64
	text string
}

// xLabels thins the bucket labels so that they never overlap: every k-th
// bucket on a round boundary (labelEvery, aligned), and none that would stick
// out of the viewBox. Hour labels read "15:00", but a date ("Nov 23") at
// midnight; k is computed for the wider date.
func (c *chart) xLabels() []xLabel {
	k := labelEvery(c.slot, textW("Nov 23"), c.step)
	dates := c.daily || time.Duration(k)*c.step%dayLength == 0
	var out []xLabel
	last := -k
	for i := range c.pts {
		t := c.pts[i].Start
		if i-last < k || !aligned(t, c.step, c.loc, k) {
			continue
		}
		lt := t.In(c.loc)
		text := lt.Format("15:04")
		if dates || lt.Hour() == 0 && lt.Minute() == 0 {
			text = lt.Format("Jan 2") // a date at each midnight
		}
		x, half := c.left+(float64(i)+0.5)*c.slot, textW(text)/2
		if x-half < 0 || x+half > c.w {
			continue
		}
		out = append(out, xLabel{x, text})
		last = i
	}
	return out
}

func (c *chart) xAxis(w *buf) {
	w.s(`<g fill="` + colText + `" text-anchor="middle">`)
	for _, l := range c.xLabels() {
		w.s(`<text x="`)
		w.f(l.x)
		w.s(`" y="`)
		w.f(c.h - 6)
		w.s(`">`)
		w.s(l.text)
		w.s("</text>")
	}
	w.s("</g>")
}

// appendWhen appends a bucket's date (and time, below a day), with the year
// when the chart spans two years.
func (c *chart) appendWhen(b []byte, t time.Time) []byte {
	layout := "Jan 2 15:04"
	switch {
	case c.daily && c.multiYear:
		layout = "Jan 2 2006"
	case c.daily:
		layout = "Jan 2"
	case c.multiYear:
		layout = "Jan 2 2006 15:04"
	}
	return t.In(c.loc).AppendFormat(b, layout)
}

// appendCounts appends "12 admitted, 1 refused, 0 errors, 40 cost".
func (c *chart) appendCounts(w *buf, d usage.Delta) {
	_, errs, _ := split(d)
	w.b = appendGrouped(w.b, d.Admitted)
	w.s(" admitted, ")
	w.b = appendGrouped(w.b, d.Refused)
	w.s(" refused, ")
	w.b = appendGrouped(w.b, errs)
	w.s(" errors, ")
	w.b = appendGrouped(w.b, d.Cost)
	w.s(" cost")
}

// describe is the <desc>: the period, the totals in words, the range and the
// busiest bucket.
func (c *chart) describe() string {
	n := len(c.pts)
	if n == 0 {
		return EmptyText + "."
	}
	var b strings.Builder
	b.WriteString(period(n, c.step, c.daily))
	b.WriteString(": ")
	if c.empty {
		b.WriteString(EmptyText)
	} else {
		_, errs, _ := split(c.total)
		fmt.Fprintf(&b, "%s admitted, %s refused (429), %s errors, %s cost points",
			grouped(c.total.Admitted), grouped(c.total.Refused), grouped(errs), grouped(c.total.Cost))
	}
	first, last := c.pts[0].Start.In(c.loc), c.pts[n-1].Start.In(c.loc)
	if c.daily {
		fmt.Fprintf(&b, ". Days %s to %s (UTC).", first.Format("Jan 2 2006"), last.Format("Jan 2 2006"))
	} else {
		fmt.Fprintf(&b, ". From %s to %s (%s).", first.Format("Jan 2 2006 15:04"), last.Add(c.step).Format("Jan 2 2006 15:04"), c.loc)
	}
	busiest, most := 0, int64(0)
	for i := range c.pts {
		if r := c.pts[i].Admitted + c.pts[i].Refused; r > most {
			busiest, most = i, r
		}
	}
	if most > 0 {
		unit := period(1, c.step, c.daily) // "2 hours" when buckets were merged
		switch {
		case c.step == time.Hour:
			unit = "hour"
		case c.step == dayLength:
			unit = "day"
		}
		fmt.Fprintf(&b, " Busiest %s: %s, %s requests.", unit, c.appendWhen(nil, c.pts[busiest].Start), grouped(most))
	}
	return b.String()
}

// period says how long n buckets of step are: "24 hours", "90 days".
func period(n int, step time.Duration, daily bool) string {
	span := time.Duration(n) * step
	plural := func(v int64, unit string) string {
		if v == 1 {
			return "1 " + unit
		}
		return grouped(v) + " " + unit + "s"
	}
	switch {
	case span%dayLength == 0 && (daily || span >= 2*dayLength):
		return plural(int64(span/dayLength), "day")
	case span%time.Hour == 0:
		return plural(int64(span/time.Hour), "hour")
	case span%time.Minute == 0:
		return plural(int64(span/time.Minute), "minute")
	}
	return span.String()
}
